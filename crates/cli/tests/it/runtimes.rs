//! The differential suite: every case runs through `pullcheck check` and through the
//! real runtime (containerd by `ctr` and through its CRI plugin's `PullImage` as the
//! kubelet calls it, podman for containers/image) on the same loopback
//! registries and the same configuration files, and the two must agree: pullcheck's
//! `present` ⇔ the pull succeeds, a failure's kind mapped (not found, unauthorized,
//! TLS, unreachable, platform, blocked), and, for a success, the registry that served
//! the manifest (from the registries' request logs and the report's `registry`).
//!
//! `#[ignore]`d: it needs Debian's `containerd` and `podman` and root; `scripts/test.sh`
//! runs it (`-- --ignored`) when both are installed and prints `SKIPPED:` otherwise.
//! With `PULLCHECK_RUNTIMES_TABLE=FILE` it writes the table of `docs/fidelity.md`
//! (`scripts/runtimes-table.sh`). A row where pullcheck deliberately differs carries its
//! explanation; such a row must still differ (a stale explanation fails the test).
//! `PULLCHECK_RUNTIMES_ONLY=NAME` runs only the cases of one runtime (`containerd`,
//! `containerd CRI`, `podman`) while working on them; the table is then partial.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use pullcheck_testkit::cri::CriAuth;
use pullcheck_testkit::kube::{DockerAuth, pull_secret_manifest};
use pullcheck_testkit::runtime::{
    Containerd, CtrPull, Podman, PodmanPull, PullOutcome, make_tls_files,
};
use pullcheck_testkit::{
    Auth, ImageKind, Registry, Repos, RequestRecord, TempDir, TokenPolicy, User,
};

use crate::util::temp_dir;

const USER: &str = "runtime-user";
const PASSWORD: &str = "runtime-password-1";
const WRONG: &str = "wrong-password-2";
/// The `otok` user's refresh token (an `identitytoken` in containerd's config.toml).
const REFRESH: &str = "runtime-refresh-token-3";

/// The registries every case draws on, by the label the table shows.
struct Env {
    anon: Registry,
    mirror: Registry,
    empty: Registry,
    htp: Registry,
    tok: Registry,
    tls: Registry,
    /// A token registry whose token server takes the OAuth2 form (`POST`), the user
    /// holding a refresh token (an `identitytoken`).
    otok: Registry,
    down: pullcheck_testkit::ClosedPort,
    ca: PathBuf,
    ca_dir: PathBuf,
    digest: String,
    _tls_dir: TempDir,
}

impl Env {
    async fn start() -> Env {
        let tls_dir = temp_dir("runtimes-tls");
        let files = make_tls_files(&tls_dir).expect("TLS files");
        let ca_dir = tls_dir.join("cadir");
        std::fs::create_dir(&ca_dir).unwrap();
        std::fs::copy(&files.ca, ca_dir.join("ca.crt")).unwrap();
        let users = vec![User::new(USER, PASSWORD).pulling(Repos::All)];
        let anon = Registry::anonymous().await.unwrap();
        let mirror = Registry::builder().mirror_of(&anon).start().await.unwrap();
        let empty = Registry::anonymous().await.unwrap();
        let htp = Registry::builder()
            .auth(Auth::Htpasswd(users.clone()))
            .start()
            .await
            .unwrap();
        let tok = Registry::builder()
            .auth(Auth::Token(TokenPolicy::new(users)))
            .start()
            .await
            .unwrap();
        let tls = Registry::builder()
            .tls(files.clone())
            .start()
            .await
            .unwrap();
        let refresh = vec![
            User::new(USER, PASSWORD)
                .with_refresh_token(REFRESH)
                .pulling(Repos::All),
        ];
        let otok = Registry::builder()
            .auth(Auth::Token(TokenPolicy::new(refresh).oauth_post(true)))
            .start()
            .await
            .unwrap();
        let v1 = anon
            .push("app", "v1", ImageKind::OciManifest)
            .await
            .unwrap();
        anon.push("app", "docker", ImageKind::DockerManifest)
            .await
            .unwrap();
        anon.push("app", "idx", ImageKind::OciIndex).await.unwrap();
        anon.push("app", "list", ImageKind::DockerManifestList)
            .await
            .unwrap();
        anon.push_platform("arm", "v1", ImageKind::OciManifest, "linux/arm64")
            .await
            .unwrap();
        empty
            .push("other", "v1", ImageKind::OciManifest)
            .await
            .unwrap();
        htp.push("app", "v1", ImageKind::OciManifest).await.unwrap();
        htp.push("team/app", "v1", ImageKind::OciManifest)
            .await
            .unwrap();
        otok.push("team/app", "v1", ImageKind::OciManifest)
            .await
            .unwrap();
        anon.push_index_platforms(
            "armlist",
            "v1",
            ImageKind::DockerManifestList,
            &["linux/arm/v7"],
        )
        .await
        .unwrap();
        tok.push("team/app", "v1", ImageKind::OciManifest)
            .await
            .unwrap();
        tls.push("app", "v1", ImageKind::OciManifest).await.unwrap();
        // Refuses connections, and no parallel test's server is given the port.
        let down = pullcheck_testkit::ClosedPort::new();
        Env {
            anon,
            mirror,
            empty,
            htp,
            tok,
            tls,
            otok,
            down,
            ca: files.ca.clone(),
            ca_dir,
            digest: v1.digest,
            _tls_dir: tls_dir,
        }
    }

    fn registries(&self) -> [(&'static str, &Registry); 7] {
        [
            ("mirror", &self.mirror),
            ("anon", &self.anon),
            ("empty", &self.empty),
            ("htp", &self.htp),
            ("tok", &self.tok),
            ("tls", &self.tls),
            ("otok", &self.otok),
        ]
    }

    /// `{ANON}`, `{MIRROR}`, … replaced by the hosts, `{CA}` by the CA file,
    /// `{DIGEST}` by app:v1's digest.
    fn fill(&self, s: &str) -> String {
        let mut s = s.to_owned();
        for (label, r) in self.registries() {
            s = s.replace(&format!("{{{}}}", label.to_uppercase()), r.host());
        }
        s.replace("{DOWN}", &self.down.host())
            .replace("{CA}", &self.ca.to_string_lossy())
            .replace("{DIGEST}", &self.digest)
    }

    fn label_of(&self, host: &str) -> String {
        self.registries()
            .iter()
            .find(|(_, r)| r.host() == host)
            .map_or_else(|| host.to_owned(), |(l, _)| (*l).to_owned())
    }

    async fn clear(&self) {
        for (_, r) in self.registries() {
            r.clear_requests().await.unwrap();
        }
    }

    /// The registry that served a manifest (a 200 on `/manifests/`): the mirror when it
    /// did (its own requests to its upstream show in the upstream's log).
    async fn served(&self) -> Option<String> {
        for (label, r) in self.registries() {
            let log: Vec<RequestRecord> = r.requests().await.unwrap();
            if log
                .iter()
                .any(|q| q.status == 200 && q.path.contains("/manifests/"))
            {
                return Some(label.to_owned());
            }
        }
        None
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Rt {
    /// containerd through `ctr` (the client-side resolver).
    Containerd,
    /// containerd through its CRI plugin (`PullImage`, as the kubelet calls it).
    Cri,
    Podman,
}

impl Rt {
    fn name(self) -> &'static str {
        match self {
            Rt::Containerd => "containerd",
            Rt::Cri => "containerd CRI",
            Rt::Podman => "podman",
        }
    }
}

/// The runtime side of a case: the files both it and pullcheck read.
#[derive(Default, Clone)]
struct Setup {
    /// containerd: `(host directory, hosts.toml)`; podman: `("", registries.conf)`.
    files: Vec<(&'static str, &'static str)>,
    /// Credentials: containerd `--user` / a pull secret for the image's registry;
    /// podman an auth.json entry under this key (`""`: the image's registry).
    creds: Option<(&'static str, &'static str)>,
    /// podman: the auth.json key (default: the image's registry host).
    auth_key: Option<&'static str>,
    /// podman `--cert-dir` with the test CA / pullcheck `--ca-file`.
    ca: bool,
    /// containerd CRI: the `registry` section of a config.toml of this case's own
    /// (`{HOSTS}` is the case's hosts directory): a containerd is started with it, and
    /// pullcheck gets `--containerd-config` on the same file instead of `--hosts-dir`.
    config_toml: Option<&'static str>,
    /// containerd CRI: send the credentials as `AuthConfig.auth` (base64
    /// `user:password`) instead of `username`/`password`.
    as_auth: bool,
    /// podman: further auth.json entries, `(key, password)` of [`USER`].
    more_auths: Vec<(&'static str, &'static str)>,
    /// podman: an auth.json `credHelpers` entry, `(key, helper name)`.
    cred_helper: Option<(&'static str, &'static str)>,
    /// podman: a `certs.d` tree with the test CA as `ca.crt` under these host
    /// directories (`{TLS}`, `{ANON}`; none: an empty tree), read per host as
    /// containers/image reads `/etc/containers/certs.d` / pullcheck `--certs-dir`.
    certs_d: Option<&'static [&'static str]>,
    /// podman: the credentials as `--creds` (`SystemContext.DockerAuthConfig`, which
    /// CRI-O fills from the pod's pull secret) / pullcheck a pull secret, instead of
    /// auth.json.
    podman_creds: bool,
    /// `PATH` for both pullcheck and the runtime (absolute directories only).
    path: Option<&'static str>,
}

struct Case {
    name: &'static str,
    image: &'static str,
    platform: &'static str,
    rt: Rt,
    setup: Setup,
    /// Why pullcheck's answer deliberately differs from this runtime's, with the source.
    differs: Option<&'static str>,
    /// One of the held-out cases (`held_out_cases`): written before pullcheck was
    /// changed for them, shown in a section of their own.
    held_out: bool,
    /// The `version_warnings` kinds pullcheck's report must carry (and no others).
    version_warnings: &'static [&'static str],
}

fn case(name: &'static str, rt: Rt, image: &'static str) -> Case {
    Case {
        name,
        image,
        platform: "linux/amd64",
        rt,
        setup: Setup::default(),
        differs: None,
        held_out: false,
        version_warnings: &[],
    }
}

impl Case {
    fn files(mut self, files: &[(&'static str, &'static str)]) -> Case {
        self.setup.files = files.to_vec();
        self
    }
    fn creds(mut self, user: &'static str, password: &'static str) -> Case {
        self.setup.creds = Some((user, password));
        self
    }
    fn auth_key(mut self, key: &'static str) -> Case {
        self.setup.auth_key = Some(key);
        self
    }
    fn config_toml(mut self, registry: &'static str) -> Case {
        self.setup.config_toml = Some(registry);
        self
    }
    fn ca(mut self) -> Case {
        self.setup.ca = true;
        self
    }
    fn platform(mut self, p: &'static str) -> Case {
        self.platform = p;
        self
    }
    fn auth_base64(mut self) -> Case {
        self.setup.as_auth = true;
        self
    }
    fn more_auths(mut self, auths: &[(&'static str, &'static str)]) -> Case {
        self.setup.more_auths = auths.to_vec();
        self
    }
    fn cred_helper(mut self, key: &'static str, helper: &'static str) -> Case {
        self.setup.cred_helper = Some((key, helper));
        self
    }
    fn differs(mut self, why: &'static str) -> Case {
        self.differs = Some(why);
        self
    }
    fn certs_d(mut self, hosts: &'static [&'static str]) -> Case {
        self.setup.certs_d = Some(hosts);
        self
    }
    fn podman_creds(mut self, user: &'static str, password: &'static str) -> Case {
        self.setup.creds = Some((user, password));
        self.setup.podman_creds = true;
        self
    }
    fn path(mut self, path: &'static str) -> Case {
        self.setup.path = Some(path);
        self
    }
    fn warns(mut self, kinds: &'static [&'static str]) -> Case {
        self.version_warnings = kinds;
        self
    }
}

/// The `PATH` of the absent-helper case: absolute directories only (a helper found
/// through a relative entry is refused as relative, another case), none of which holds
/// `docker-credential-pullcheck-absent-helper` (checked).
const ABSENT_HELPER_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// podman's registries.conf marking the plain-HTTP registries insecure, as a node with
/// loopback registries needs.
const INSECURE: &str = "[[registry]]\nlocation = \"{ANON}\"\ninsecure = true\n\
[[registry]]\nlocation = \"{HTP}\"\ninsecure = true\n\
[[registry]]\nlocation = \"{TOK}\"\ninsecure = true\n\
[[registry]]\nlocation = \"{DOWN}\"\ninsecure = true\n";

fn cases() -> Vec<Case> {
    use Rt::{Containerd as C, Podman as P};
    let mut v = Vec::new();
    // The same questions of every runtime: formats, platforms, missing, auth, network.
    // The CRI plugin pulls for the node's platform (linux/amd64 here; PullImage has no
    // platform), so it gets no case that asks for another one.
    for rt in [C, Rt::Cri, P] {
        let open: &[(&str, &str)] = if rt == P { &[("", INSECURE)] } else { &[] };
        let c = |name, image| case(name, rt, image).files(open);
        v.push(c("OCI manifest, present", "{ANON}/app:v1"));
        v.push(c("Docker schema 2 manifest, present", "{ANON}/app:docker"));
        v.push(c("OCI index with linux/amd64", "{ANON}/app:idx"));
        v.push(c(
            "Docker manifest list with linux/amd64",
            "{ANON}/app:list",
        ));
        if rt != Rt::Cri {
            v.push(
                c(
                    "OCI index without the platform (linux/s390x)",
                    "{ANON}/app:idx",
                )
                .platform("linux/s390x"),
            );
            v.push(
                c(
                    "Docker list without the platform (linux/s390x)",
                    "{ANON}/app:list",
                )
                .platform("linux/s390x"),
            );
        }
        v.push(c(
            "single-platform linux/arm64 image asked for linux/amd64",
            "{ANON}/arm:v1",
        ));
        v.push(c("missing tag", "{ANON}/app:nope"));
        v.push(c("missing repository", "{ANON}/nothing:v1"));
        v.push(c("by digest, present", "{ANON}/app@{DIGEST}"));
        v.push(c(
            "missing digest",
            "{ANON}/app@sha256:0000000000000000000000000000000000000000000000000000000000000001",
        ));
        v.push(c("htpasswd, right credentials", "{HTP}/app:v1").creds(USER, PASSWORD));
        v.push(c("htpasswd, wrong credentials", "{HTP}/app:v1").creds(USER, WRONG));
        v.push(c("htpasswd, no credentials", "{HTP}/app:v1"));
        v.push(c("token, right credentials", "{TOK}/team/app:v1").creds(USER, PASSWORD));
        v.push(c("token, wrong credentials", "{TOK}/team/app:v1").creds(USER, WRONG));
        v.push(c("token, no credentials", "{TOK}/team/app:v1"));
        v.push(
            c(
                "token, right credentials, missing tag",
                "{TOK}/team/app:nope",
            )
            .creds(USER, PASSWORD),
        );
        v.push(c("registry down", "{DOWN}/app:v1"));
    }
    // containerd hosts.toml.
    let h = |name, image, files: &[(&'static str, &'static str)]| case(name, C, image).files(files);
    v.push(h(
        "hosts.toml: mirror first",
        "{ANON}/app:v1",
        &[("{ANON}", "server = \"http://{ANON}\"\n[host.\"http://{MIRROR}\"]\ncapabilities = [\"pull\", \"resolve\"]\n")],
    ));
    v.push(h(
        "hosts.toml: mirror lacking the image",
        "{ANON}/app:v1",
        &[("{ANON}", "server = \"http://{ANON}\"\n[host.\"http://{EMPTY}\"]\ncapabilities = [\"pull\", \"resolve\"]\n")],
    ));
    v.push(h(
        "hosts.toml: mirror down",
        "{ANON}/app:v1",
        &[("{ANON}", "server = \"http://{ANON}\"\n[host.\"http://{DOWN}\"]\ncapabilities = [\"pull\", \"resolve\"]\n")],
    ));
    v.push(h(
        "hosts.toml: mirror with override_path",
        "{ANON}/app:v1",
        &[("{ANON}", "server = \"http://{ANON}\"\n[host.\"http://{MIRROR}/v2\"]\ncapabilities = [\"pull\", \"resolve\"]\noverride_path = true\n")],
    ));
    v.push(h(
        "hosts.toml: pull-only mirror, tag (needs resolve)",
        "{ANON}/app:v1",
        &[(
            "{ANON}",
            "server = \"http://{ANON}\"\n[host.\"http://{MIRROR}\"]\ncapabilities = [\"pull\"]\n",
        )],
    ));
    v.push(h(
        "hosts.toml: pull-only mirror, digest",
        "{ANON}/app@{DIGEST}",
        &[(
            "{ANON}",
            "server = \"http://{ANON}\"\n[host.\"http://{MIRROR}\"]\ncapabilities = [\"pull\"]\n",
        )],
    ));
    v.push(h(
        "hosts.toml: https:// mirror and server that speak plain HTTP",
        "{ANON}/app:v1",
        &[("{ANON}", "server = \"https://{ANON}\"\n[host.\"https://{MIRROR}\"]\ncapabilities = [\"pull\", \"resolve\"]\n")],
    ));
    v.push(h(
        "hosts.toml: mirror with the pull's credentials (htpasswd mirror)",
        "{ANON}/app:v1",
        &[("{ANON}", "server = \"http://{EMPTY}\"\n[host.\"http://{HTP}\"]\ncapabilities = [\"pull\", \"resolve\"]\n")],
    )
    .creds(USER, PASSWORD));
    v.push(
        h("TLS registry, default host (loopback)", "{TLS}/app:v1", &[])
            .differs(
                "containerd 1.6.9-1.6.24 and 1.7.0-1.7.6 give a loopback registry's default \
                 host the http scheme only (ConfigureHosts, remotes/docker/config/hosts.go \
                 v1.6.20 lines 102-109), and the TLS port answers 400; 1.6.25 (lines 104-119, \
                 and the HTTPS-first fallback of lines 254-260) and 1.7.7 on try HTTPS without \
                 verification, then HTTP, which pullcheck models and warns about",
            )
            .warns(&["loopback_default_host_over_tls"]),
    );
    v.push(h(
        "hosts.toml: TLS host without ca",
        "{TLS}/app:v1",
        &[(
            "{TLS}",
            "server = \"https://{TLS}\"\n[host.\"https://{TLS}\"]\n",
        )],
    ));
    v.push(h(
        "hosts.toml: TLS host with ca",
        "{TLS}/app:v1",
        &[(
            "{TLS}",
            "server = \"https://{TLS}\"\n[host.\"https://{TLS}\"]\nca = \"{CA}\"\n",
        )],
    ));
    v.push(h(
        "hosts.toml: TLS host with skip_verify",
        "{TLS}/app:v1",
        &[(
            "{TLS}",
            "server = \"https://{TLS}\"\n[host.\"https://{TLS}\"]\nskip_verify = true\n",
        )],
    ));
    v.push(
        h(
            "hosts.toml: only server = (no [host] table)",
            "{ANON}/app:v1",
            &[("{ANON}", "server = \"http://{MIRROR}\"\n")],
        )
        .differs(
            "containerd 1.6.x and 1.7.0-1.7.31 reject a hosts.toml without a [host] table \
             (getSortedHosts: \"invalid `host` tree\", remotes/docker/config/hosts.go v1.6.20 \
             lines 497-501, v1.7.31 line 534), ignore the file (loadHostDir, v1.6.20 lines \
             279-284) and ask the image's own registry; 1.7.32 (commit 24007441d) and 2.x \
             accept it, which pullcheck models and warns about",
        )
        .warns(&["hosts_toml_without_host_table"]),
    );
    // containers/image registries.conf.
    let p = |name, image, conf: &'static str| case(name, P, image).files(&[("", conf)]);
    v.push(p(
        "registries.conf: plain-HTTP loopback registry, not insecure",
        "{ANON}/app:v1",
        "",
    ));
    v.push(p(
        "registries.conf: mirror first",
        "{ANON}/app:v1",
        "[[registry]]\nlocation = \"{ANON}\"\ninsecure = true\n[[registry.mirror]]\nlocation = \"{MIRROR}\"\ninsecure = true\n",
    ));
    v.push(p(
        "registries.conf: mirror lacking the image",
        "{ANON}/app:v1",
        "[[registry]]\nlocation = \"{ANON}\"\ninsecure = true\n[[registry.mirror]]\nlocation = \"{EMPTY}\"\ninsecure = true\n",
    ));
    v.push(p(
        "registries.conf: mirror down",
        "{ANON}/app:v1",
        "[[registry]]\nlocation = \"{ANON}\"\ninsecure = true\n[[registry.mirror]]\nlocation = \"{DOWN}\"\ninsecure = true\n",
    ));
    v.push(p(
        "registries.conf: mirror not insecure (plain HTTP)",
        "{ANON}/app:v1",
        "[[registry]]\nlocation = \"{ANON}\"\ninsecure = true\n[[registry.mirror]]\nlocation = \"{MIRROR}\"\n",
    ));
    v.push(p(
        "registries.conf: digest-only mirror, tag",
        "{ANON}/app:v1",
        "[[registry]]\nlocation = \"{ANON}\"\ninsecure = true\nmirror-by-digest-only = true\n[[registry.mirror]]\nlocation = \"{MIRROR}\"\ninsecure = true\n",
    ));
    v.push(p(
        "registries.conf: digest-only mirror, digest",
        "{ANON}/app@{DIGEST}",
        "[[registry]]\nlocation = \"{ANON}\"\ninsecure = true\nmirror-by-digest-only = true\n[[registry.mirror]]\nlocation = \"{MIRROR}\"\ninsecure = true\n",
    ));
    v.push(p(
        "registries.conf: blocked registry",
        "{ANON}/app:v1",
        "[[registry]]\nlocation = \"{ANON}\"\ninsecure = true\nblocked = true\n",
    ));
    // Two entries of one prefix: containers/image keeps the first (system_registries_v2.go
    // v5.23.1 lines 479-499), so the second's mirror is never asked.
    v.push(p(
        "registries.conf: a repeated prefix (the first entry wins, its twin's mirror unused)",
        "{ANON}/app:v1",
        "[[registry]]\nprefix = \"{ANON}\"\nlocation = \"{ANON}\"\ninsecure = true\n[[registry]]\nprefix = \"{ANON}\"\nlocation = \"{ANON}\"\ninsecure = true\n[[registry.mirror]]\nlocation = \"{MIRROR}\"\ninsecure = true\n",
    ));
    v.push(p(
        "registries.conf: prefix remapped to another repository",
        "{ANON}/alias:v1",
        "[[registry]]\nprefix = \"{ANON}/alias\"\nlocation = \"{ANON}/app\"\ninsecure = true\n",
    ));
    v.push(
        p(
            "registries.conf: mirror with its own auth (htpasswd mirror)",
            "{ANON}/app:v1",
            "[[registry]]\nlocation = \"{EMPTY}\"\ninsecure = true\nprefix = \"{ANON}\"\n[[registry.mirror]]\nlocation = \"{HTP}\"\ninsecure = true\n",
        )
        .creds(USER, PASSWORD)
        .auth_key("{HTP}"),
    );
    v.push(
        p(
            "auth.json matched by repository path",
            "{HTP}/app:v1",
            INSECURE,
        )
        .creds(USER, PASSWORD)
        .auth_key("{HTP}/app"),
    );
    v.push(
        p(
            "auth.json for another repository path",
            "{HTP}/app:v1",
            INSECURE,
        )
        .creds(USER, PASSWORD)
        .auth_key("{HTP}/other"),
    );
    v.push(p("TLS registry, not insecure, no CA", "{TLS}/app:v1", ""));
    v.push(p("TLS registry with the CA (cert-dir)", "{TLS}/app:v1", "").ca());
    v.push(p(
        "TLS registry, insecure = true",
        "{TLS}/app:v1",
        "[[registry]]\nlocation = \"{TLS}\"\ninsecure = true\n",
    ));
    // A per-host certs.d tree (containers/image's /etc/containers/certs.d layout, the
    // one CRI-O reads) against pullcheck --certs-dir on the same tree.
    v.push(
        p(
            "certs.d: the CA under the registry's host:port",
            "{TLS}/app:v1",
            "",
        )
        .certs_d(&["{TLS}"]),
    );
    v.push(
        p(
            "certs.d: the CA under another host's directory",
            "{TLS}/app:v1",
            "",
        )
        .certs_d(&["{ANON}"]),
    );
    v.push(p("certs.d: no directory for the registry", "{TLS}/app:v1", "").certs_d(&[]));
    // podman --creds: the DockerAuthConfig CRI-O fills from the pod's pull secret,
    // against pullcheck given the same credential as a pull secret.
    v.push(
        p(
            "--creds (a pull secret), htpasswd, right",
            "{HTP}/app:v1",
            INSECURE,
        )
        .podman_creds(USER, PASSWORD),
    );
    v.push(
        p(
            "--creds (a pull secret), htpasswd, wrong",
            "{HTP}/app:v1",
            INSECURE,
        )
        .podman_creds(USER, WRONG),
    );
    v.push(
        p(
            "--creds (a pull secret) not sent to a mirror on another domain (htpasswd mirror)",
            "{ANON}/app:v1",
            "[[registry]]\nlocation = \"{ANON}\"\ninsecure = true\n[[registry.mirror]]\nlocation = \"{HTP}\"\ninsecure = true\n",
        )
        .podman_creds(USER, PASSWORD),
    );
    // containerd through its CRI plugin: the kubelet's PullImage, the pod's pull secret
    // as its AuthConfig (no server address), config_path the hosts directory.
    // (The questions every runtime is asked are in the loop above.)
    let r = |name, image| case(name, Rt::Cri, image);
    v.push(r("hosts.toml: mirror first", "{ANON}/app:v1").files(&[(
        "{ANON}",
        "server = \"http://{ANON}\"\n[host.\"http://{MIRROR}\"]\ncapabilities = [\"pull\", \"resolve\"]\n",
    )]));
    v.push(
        r(
            "hosts.toml: the pod's pull secret on the mirror (htpasswd mirror)",
            "{ANON}/app:v1",
        )
        .files(&[(
            "{ANON}",
            "server = \"http://{EMPTY}\"\n[host.\"http://{HTP}\"]\ncapabilities = [\"pull\", \"resolve\"]\n",
        )])
        .creds(USER, PASSWORD),
    );
    v.push(
        r(
            "hosts.toml: a 401 at the mirror moves on (htpasswd mirror, no credentials)",
            "{ANON}/app:v1",
        )
        .files(&[(
            "{ANON}",
            "server = \"http://{ANON}\"\n[host.\"http://{HTP}\"]\ncapabilities = [\"pull\", \"resolve\"]\n",
        )]),
    );
    v.push(
        r(
            "hosts.toml: wrong credentials at the mirror move on (htpasswd mirror)",
            "{ANON}/app:v1",
        )
        .files(&[(
            "{ANON}",
            "server = \"http://{ANON}\"\n[host.\"http://{HTP}\"]\ncapabilities = [\"pull\", \"resolve\"]\n",
        )])
        .creds(USER, WRONG),
    );
    // containerd's own config.toml: configs."HOST".auth, per contacted host, only when
    // the pull carries no credentials (pkg/cri/server/image_pull.go registryHosts,
    // v1.6.20 lines 339-348).
    const HTP_MIRROR: &[(&str, &str)] = &[(
        "{ANON}",
        "server = \"http://{EMPTY}\"\n[host.\"http://{HTP}\"]\ncapabilities = [\"pull\", \"resolve\"]\n",
    )];
    v.push(
        r(
            "config.toml: configs auth of the mirror's host used on the mirror",
            "{ANON}/app:v1",
        )
        .files(HTP_MIRROR)
        .config_toml(concat!(
            "[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"{HOSTS}\"\n",
            "[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"{HTP}\".auth]\n",
            "  username = \"runtime-user\"\n  password = \"runtime-password-1\"\n"
        )),
    );
    v.push(
        r(
            "config.toml: the image registry's configs auth is not sent to the mirror",
            "{ANON}/app:v1",
        )
        .files(&[(
            "{ANON}",
            "server = \"http://{HTP}\"\n[host.\"http://{HTP}\"]\ncapabilities = [\"pull\", \"resolve\"]\n",
        )])
        .config_toml(concat!(
            "[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"{HOSTS}\"\n",
            "[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"{ANON}\".auth]\n",
            "  username = \"runtime-user\"\n  password = \"runtime-password-1\"\n"
        )),
    );
    v.push(
        r(
            "config.toml: the pull's credentials beat configs auth (wrong there)",
            "{ANON}/app:v1",
        )
        .files(HTP_MIRROR)
        .creds(USER, PASSWORD)
        .config_toml(concat!(
            "[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"{HOSTS}\"\n",
            "[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"{HTP}\".auth]\n",
            "  username = \"runtime-user\"\n  password = \"wrong-password-2\"\n"
        )),
    );
    v.push(
        r(
            "config.toml: no config_path, deprecated mirrors with configs auth (mirror's host)",
            "{ANON}/app:v1",
        )
        .config_toml(concat!(
            "[plugins.\"io.containerd.grpc.v1.cri\".registry.mirrors.\"{ANON}\"]\n",
            "  endpoint = [\"http://{HTP}\"]\n",
            "[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"{HTP}\".auth]\n",
            "  auth = \"cnVudGltZS11c2VyOnJ1bnRpbWUtcGFzc3dvcmQtMQ==\"\n"
        )),
    );
    v.push(
        r(
            "config.toml: no config_path, no mirrors (the CRI plugin reads no certs.d)",
            "{ANON}/app:v1",
        )
        .config_toml(""),
    );
    v
}

/// The held-out cases: written after the tuned cases above agreed, run once against
/// pullcheck as it stood before any change for them (the first result is in
/// `scripts/runtimes-notes.md`), in a table section of their own.
fn held_out_cases() -> Vec<Case> {
    use Rt::{Containerd as C, Podman as P};
    let mut v = Vec::new();
    let h = |name, image, files: &[(&'static str, &'static str)]| case(name, C, image).files(files);
    // containerd hosts.toml (ctr).
    v.push(h(
        "hosts.toml: [header] on the server and on a mirror host",
        "{ANON}/app:v1",
        &[("{ANON}", "server = \"http://{ANON}\"\n[header]\n  x-pullcheck-a = [\"1\", \"2\"]\n[host.\"http://{MIRROR}\"]\n  capabilities = [\"pull\", \"resolve\"]\n  [host.\"http://{MIRROR}\".header]\n    x-pullcheck-b = \"3\"\n")],
    ));
    v.push(h(
        "hosts.toml: first host resolve-only, second pull and resolve, tag",
        "{ANON}/app:v1",
        &[("{ANON}", "server = \"http://{ANON}\"\n[host.\"http://{MIRROR}\"]\n  capabilities = [\"resolve\"]\n[host.\"http://{EMPTY}\"]\n  capabilities = [\"pull\", \"resolve\"]\n")],
    ));
    v.push(h(
        "hosts.toml: first host resolve-only, second pull and resolve, digest",
        "{ANON}/app@{DIGEST}",
        &[("{ANON}", "server = \"http://{ANON}\"\n[host.\"http://{MIRROR}\"]\n  capabilities = [\"resolve\"]\n[host.\"http://{EMPTY}\"]\n  capabilities = [\"pull\", \"resolve\"]\n")],
    ));
    v.push(h(
        "hosts.toml: TLS mirror with skip_verify",
        "{ANON}/app:v1",
        &[("{ANON}", "server = \"http://{ANON}\"\n[host.\"https://{TLS}\"]\n  capabilities = [\"pull\", \"resolve\"]\n  skip_verify = true\n")],
    ));
    v.push(h(
        "hosts.toml: TLS mirror with ca as a list",
        "{ANON}/app:v1",
        &[("{ANON}", "server = \"http://{ANON}\"\n[host.\"https://{TLS}\"]\n  capabilities = [\"pull\", \"resolve\"]\n  ca = [\"{CA}\"]\n")],
    ));
    v.push(h(
        "hosts.toml: mirror with override_path, digest reference",
        "{ANON}/app@{DIGEST}",
        &[("{ANON}", "server = \"http://{ANON}\"\n[host.\"http://{MIRROR}/v2\"]\n  capabilities = [\"pull\", \"resolve\"]\n  override_path = true\n")],
    ));
    v.push(h(
        "hosts.toml: _default directory with a mirror",
        "{ANON}/app:v1",
        &[(
            "_default",
            "[host.\"http://{MIRROR}\"]\n  capabilities = [\"pull\", \"resolve\"]\n",
        )],
    ));
    // Platforms and variants, on the runtimes that take --platform.
    for rt in [C, P] {
        let open: &[(&str, &str)] = if rt == P { &[("", INSECURE)] } else { &[] };
        let c = |name, image, platform| case(name, rt, image).files(open).platform(platform);
        v.push(c(
            "OCI index (arm64 entry is linux/arm64/v8) asked as linux/arm64",
            "{ANON}/app:idx",
            "linux/arm64",
        ));
        v.push(c(
            "Docker list whose only entry is linux/arm/v7, asked as linux/arm",
            "{ANON}/armlist:v1",
            "linux/arm",
        ));
        v.push(c(
            "Docker list whose only entry is linux/arm/v7, asked as linux/arm/v6",
            "{ANON}/armlist:v1",
            "linux/arm/v6",
        ));
    }
    // containerd's CRI plugin.
    let r = |name, image| case(name, Rt::Cri, image);
    v.push(
        r(
            "AuthConfig.auth (base64) instead of username and password",
            "{HTP}/app:v1",
        )
        .creds(USER, PASSWORD)
        .auth_base64(),
    );
    v.push(
        r(
            "config.toml: configs auth identitytoken (OAuth2 refresh token)",
            "{OTOK}/team/app:v1",
        )
        .config_toml(concat!(
            "[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"{HOSTS}\"\n",
            "[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"{OTOK}\".auth]\n",
            "  identitytoken = \"runtime-refresh-token-3\"\n"
        )),
    );
    v.push(
        r(
            "config.toml: configs auth identitytoken, wrong",
            "{OTOK}/team/app:v1",
        )
        .config_toml(concat!(
            "[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"{HOSTS}\"\n",
            "[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"{OTOK}\".auth]\n",
            "  identitytoken = \"not-the-refresh-token\"\n"
        )),
    );
    v.push(
        r(
            "config.toml: https endpoint with configs tls ca_file",
            "{TLS}/app:v1",
        )
        .config_toml(concat!(
            "[plugins.\"io.containerd.grpc.v1.cri\".registry.mirrors.\"{TLS}\"]\n",
            "  endpoint = [\"https://{TLS}\"]\n",
            "[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"{TLS}\".tls]\n",
            "  ca_file = \"{CA}\"\n"
        )),
    );
    v.push(
        r(
            "config.toml: https endpoint with configs tls insecure_skip_verify",
            "{TLS}/app:v1",
        )
        .config_toml(concat!(
            "[plugins.\"io.containerd.grpc.v1.cri\".registry.mirrors.\"{TLS}\"]\n",
            "  endpoint = [\"https://{TLS}\"]\n",
            "[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"{TLS}\".tls]\n",
            "  insecure_skip_verify = true\n"
        )),
    );
    v.push(
        r(
            "config.toml: no mirrors, configs tls ca_file for a loopback TLS registry",
            "{TLS}/app:v1",
        )
        .config_toml(concat!(
            "[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"{TLS}\".tls]\n",
            "  ca_file = \"{CA}\"\n"
        )),
    );
    v.push(
        r(
            "hosts.toml: wrong pull secret, mirror down, then the registry",
            "{HTP}/app:v1",
        )
        .files(&[(
            "{HTP}",
            "server = \"http://{HTP}\"\n[host.\"http://{DOWN}\"]\n  capabilities = [\"pull\", \"resolve\"]\n",
        )])
        .creds(USER, WRONG)
        .differs(
            "both fail; containerd reports the first host's error (`firstErr` in \
             dockerResolver.Resolve, remotes/docker/resolver.go v1.6.20 lines 232 and \
             286-302), here the mirror's refused \
             connection, though the registry after it refused the credentials; pullcheck \
             reports the most telling answer of all hosts (a registry's answer outranks a \
             network error, `query::choose`) and lists every host's attempt",
        ),
    );
    // containers/image registries.conf and auth.json (podman).
    let p = |name, image, conf: &'static str| case(name, P, image).files(&[("", conf)]);
    v.push(p(
        "registries.conf: location remap with an insecure mirror",
        "{EMPTY}/alias:v1",
        "[[registry]]\nprefix = \"{EMPTY}/alias\"\nlocation = \"{ANON}/app\"\ninsecure = true\n[[registry.mirror]]\nlocation = \"{MIRROR}/app\"\ninsecure = true\n",
    ));
    v.push(p(
        "registries.conf: only the mirror insecure",
        "{ANON}/app:v1",
        "[[registry]]\nlocation = \"{ANON}\"\n[[registry.mirror]]\nlocation = \"{MIRROR}\"\ninsecure = true\n",
    ));
    v.push(p(
        "registries.conf: digest-only mirror lacking the digest",
        "{ANON}/app@{DIGEST}",
        "[[registry]]\nlocation = \"{ANON}\"\ninsecure = true\nmirror-by-digest-only = true\n[[registry.mirror]]\nlocation = \"{EMPTY}\"\ninsecure = true\n",
    ));
    const BLOCKED_PREFIX: &str = "[[registry]]\nlocation = \"{ANON}\"\ninsecure = true\n[[registry]]\nprefix = \"{ANON}/app\"\nlocation = \"{ANON}/app\"\ninsecure = true\nblocked = true\n";
    v.push(p(
        "registries.conf: blocked prefix, image under it",
        "{ANON}/app:v1",
        BLOCKED_PREFIX,
    ));
    v.push(
        p(
            "registries.conf: blocked prefix, image beside it",
            "{ANON}/armlist:v1",
            BLOCKED_PREFIX,
        )
        .platform("linux/arm/v7"),
    );
    v.push(
        p(
            "auth.json: registry wrong, namespace right (longest match wins)",
            "{HTP}/team/app:v1",
            INSECURE,
        )
        .more_auths(&[("{HTP}", WRONG), ("{HTP}/team", PASSWORD)]),
    );
    v.push(
        p(
            "auth.json: registry and namespace right, repository wrong",
            "{HTP}/team/app:v1",
            INSECURE,
        )
        .more_auths(&[
            ("{HTP}", PASSWORD),
            ("{HTP}/team", PASSWORD),
            ("{HTP}/team/app", WRONG),
        ]),
    );
    v.push(
        p(
            "auth.json: credHelpers entry whose helper is not installed (absolute PATH without it)",
            "{HTP}/app:v1",
            INSECURE,
        )
        .more_auths(&[("{HTP}", PASSWORD)])
        .cred_helper("{HTP}", "pullcheck-absent-helper")
        .path(ABSENT_HELPER_PATH),
    );
    for c in &mut v {
        c.held_out = true;
    }
    v
}

/// One row of the table.
struct Row {
    case: String,
    rt: Rt,
    pullcheck: String,
    /// The kinds of pullcheck's `version_warnings`.
    warnings: Vec<String>,
    /// The kinds the case expects.
    expected_warnings: &'static [&'static str],
    pullcheck_served: Option<String>,
    runtime: String,
    runtime_served: Option<String>,
    runtime_output: String,
    differs: Option<&'static str>,
    held_out: bool,
}

impl Row {
    /// The kinds match (the parenthesis is pullcheck's status and reason), and so does
    /// the registry that served a pulled image.
    /// Equal kinds, and for a pull the same serving registry. `other` (an answer neither
    /// side's mapping knows: an empty report, a killed or timed-out pull, an unsorted
    /// message) never agrees, even with `other`: it was not compared.
    fn agrees(&self) -> bool {
        self.runtime != "other"
            && first_word(&self.pullcheck) == self.runtime
            && (self.runtime != "pulled" || self.pullcheck_served == self.runtime_served)
    }
}

/// pullcheck's answer in the runtimes' terms: `pulled` for present (and for an image
/// that pulls but will not run on the node), else the failure kind.
fn kind_of(status: &str, reason: &str) -> &'static str {
    match (status, reason) {
        ("present", _) | (_, "platform_mismatch") => "pulled",
        (_, "platform_not_found") => "platform",
        (_, "tls_untrusted" | "tls_failed") => "tls",
        (_, "credential_helper_failed") => "credentials",
        (_, "server_error") => "server_error",
        ("missing", _) => "not_found",
        ("no_access" | "denied", _) => "unauthorized",
        ("blocked", _) => "blocked",
        ("unreachable", _) => "unreachable",
        _ => "other",
    }
}

struct Files {
    dir: TempDir,
}

impl Files {
    /// Writes the case's files; returns the pullcheck arguments and the runtime options'
    /// paths.
    fn write(env: &Env, case: &Case, image: &str) -> (Files, Vec<String>) {
        let dir = temp_dir("runtimes-case");
        let host = image.split('/').next().unwrap_or_default().to_owned();
        let mut args = vec![
            "check".to_owned(),
            "--format".into(),
            "json".into(),
            "--deadline".into(),
            "30s".into(),
            "--platform".into(),
            case.platform.into(),
            "--image".into(),
            image.to_owned(),
        ];
        let path = |p: &Path| p.to_string_lossy().into_owned();
        match case.rt {
            Rt::Containerd | Rt::Cri => {
                let hosts = dir.join("hosts");
                std::fs::create_dir(&hosts).unwrap();
                for (d, text) in &case.setup.files {
                    let d = hosts.join(env.fill(d));
                    std::fs::create_dir_all(&d).unwrap();
                    std::fs::write(d.join("hosts.toml"), env.fill(text)).unwrap();
                }
                args.extend(["--hosts-dir".into(), path(&hosts)]);
                if let Some((user, password)) = case.setup.creds {
                    let secret = dir.join("secret.json");
                    let auths = [DockerAuth::new(&host, user, password)];
                    std::fs::write(&secret, pull_secret_manifest("ns", "regcred", &auths)).unwrap();
                    args.extend(["--pull-secret".into(), path(&secret)]);
                }
            }
            Rt::Podman => {
                let conf = dir.join("registries.conf");
                let text = case.setup.files.first().map_or("", |f| f.1);
                std::fs::write(&conf, env.fill(text)).unwrap();
                args.extend(["--registries-conf".into(), path(&conf)]);
                let auth = dir.join("auth.json");
                let mut auths = serde_json::Map::new();
                if let Some((user, password)) = case.setup.creds.filter(|_| case.setup.podman_creds)
                {
                    let secret = dir.join("secret.json");
                    let entries = [DockerAuth::new(&host, user, password)];
                    std::fs::write(&secret, pull_secret_manifest("ns", "regcred", &entries))
                        .unwrap();
                    args.extend(["--pull-secret".into(), path(&secret)]);
                } else if let Some((user, password)) = case.setup.creds {
                    use base64::Engine as _;
                    let key = case.setup.auth_key.map_or(host.clone(), |k| env.fill(k));
                    let b64 = base64::engine::general_purpose::STANDARD
                        .encode(format!("{user}:{password}"));
                    auths.insert(key, serde_json::json!({ "auth": b64 }));
                }
                for (key, password) in &case.setup.more_auths {
                    use base64::Engine as _;
                    let b64 = base64::engine::general_purpose::STANDARD
                        .encode(format!("{USER}:{password}"));
                    auths.insert(env.fill(key), serde_json::json!({ "auth": b64 }));
                }
                let mut file = serde_json::json!({ "auths": auths });
                if let Some((key, helper)) = case.setup.cred_helper {
                    file["credHelpers"] = serde_json::json!({ env.fill(key): helper });
                }
                std::fs::write(&auth, file.to_string()).unwrap();
                args.extend(["--auth-file".into(), path(&auth)]);
                if case.setup.ca {
                    args.extend(["--ca-file".into(), path(&env.ca)]);
                }
                if let Some(hosts) = case.setup.certs_d {
                    let tree = dir.join("certs.d");
                    std::fs::create_dir(&tree).unwrap();
                    for h in hosts {
                        let d = tree.join(env.fill(h));
                        std::fs::create_dir(&d).unwrap();
                        std::fs::copy(&env.ca, d.join("ca.crt")).unwrap();
                    }
                    args.extend(["--certs-dir".into(), path(&tree)]);
                }
            }
        }
        (Files { dir }, args)
    }
}

/// A release `MAJOR.MINOR.PATCH` as numbers: the first word of `text` of that shape
/// (`containerd github.com/containerd/containerd 1.6.20~ds1 …` gives 1.6.20).
fn release_in(text: &str) -> Option<(u32, u32, u32)> {
    text.split(|c: char| c.is_whitespace() || c == '~' || c == '-' || c == '+')
        .find_map(|word| {
            let mut parts = word.split('.').map(|p| p.parse::<u32>().ok());
            match (parts.next(), parts.next(), parts.next(), parts.next()) {
                (Some(Some(a)), Some(Some(b)), Some(Some(c)), None) => Some((a, b, c)),
                _ => None,
            }
        })
}

/// Whether a version warning's `differing` releases (`[{"first", "last"}]`, `last`
/// null for no end) include `release`.
fn differs_at(warning: &serde_json::Value, release: (u32, u32, u32)) -> bool {
    warning["differing"].as_array().is_some_and(|runs| {
        runs.iter().any(|run| {
            let first = run["first"].as_str().and_then(release_in);
            let last = run["last"].as_str().and_then(release_in);
            first.is_some_and(|f| f <= release) && last.is_none_or(|l| release <= l)
        })
    })
}

#[test]
fn a_warning_applies_to_the_releases_it_names() {
    assert_eq!(
        release_in("containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3"),
        Some((1, 6, 20))
    );
    let w = serde_json::json!({"differing": [
        {"first": "1.6.0", "last": "1.6.8"}, {"first": "1.7.32", "last": null}
    ]});
    assert!(differs_at(&w, (1, 6, 8)));
    assert!(!differs_at(&w, (1, 6, 20)));
    assert!(differs_at(&w, (2, 0, 0)));
}

/// pullcheck's answer (`kind (status/reason)`), the registry that served it, its
/// `detail`, and the kinds of its report's `version_warnings` that are about `release` (the containerd
/// release under test): a warning about other releases only (1.6.0–1.6.8 have no
/// loopback rule, say) has nothing to show against this one.
async fn run_pullcheck(
    env: &Env,
    args: &[String],
    home: &Path,
    path: Option<&str>,
    release: (u32, u32, u32),
) -> (String, Option<String>, String, Vec<String>) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pullcheck"));
    command
        .args(args)
        .current_dir(home)
        .env("HOME", home)
        .env_remove("DOCKER_CONFIG")
        .env_remove("REGISTRY_AUTH_FILE")
        .env("XDG_RUNTIME_DIR", home);
    if let Some(path) = path {
        command.env("PATH", path);
    }
    let out = command.output().expect("run pullcheck");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "pullcheck {args:?}: not JSON ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let image = &report["images"][0];
    let status = image["status"].as_str().unwrap_or_default();
    let reason = image["reason"].as_str().unwrap_or_default();
    let answer = format!("{} ({status}/{reason})", kind_of(status, reason));
    let served = (status == "present" || reason == "platform_mismatch")
        .then(|| image["registry"].as_str().map(|h| env.label_of(h)))
        .flatten();
    let warnings = report["version_warnings"]
        .as_array()
        .expect("the report's version_warnings")
        .iter()
        .filter(|w| differs_at(w, release))
        .map(|w| w["kind"].as_str().unwrap_or("?").to_owned())
        .collect();
    let detail = image["detail"].as_str().unwrap_or_default().to_owned();
    (answer, served, detail, warnings)
}

/// A config.toml with `config_path` and `mirrors` together: containerd does not load
/// its CRI plugin (`ValidatePluginConfig`), and pullcheck refuses the file (exit 2,
/// naming it and the key).
async fn refused_by_both(env: &Env) {
    let registry = env.fill(
        "[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"/nonexistent\"\n\
         [plugins.\"io.containerd.grpc.v1.cri\".registry.mirrors.\"{ANON}\"]\n  endpoint = [\"http://{MIRROR}\"]\n",
    );
    let err = Containerd::start_cri(&registry)
        .await
        .expect_err("containerd refuses config_path with mirrors");
    assert!(
        err.to_string()
            .contains("`mirrors` cannot be set when `config_path` is provided"),
        "{err}"
    );
    let dir = temp_dir("runtimes-refused");
    let config = dir.join("config.toml");
    std::fs::write(&config, format!("version = 2\n{registry}")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_pullcheck"))
        .args(["check", "--containerd-config"])
        .arg(&config)
        .args(["--image", &env.fill("{ANON}/app:v1")])
        .current_dir(&dir)
        .env("HOME", &dir)
        .output()
        .expect("run pullcheck");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--containerd-config"), "{stderr}");
    assert!(
        stderr.contains("`mirrors` cannot be set when `config_path` is provided"),
        "{stderr}"
    );
}

/// Empties `to` and copies the tree `from` into it (directories and files).
fn replace_dir(to: &Path, from: &Path) {
    for entry in std::fs::read_dir(to).unwrap() {
        std::fs::remove_dir_all(entry.unwrap().path()).unwrap();
    }
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        std::fs::create_dir(&dest).unwrap();
        for file in std::fs::read_dir(entry.path()).unwrap() {
            let file = file.unwrap();
            std::fs::copy(file.path(), dest.join(file.file_name())).unwrap();
        }
    }
}

fn first_word(s: &str) -> &str {
    s.split(' ').next().unwrap_or(s)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs containerd and podman (Debian packages) and root: scripts/test.sh runs it"]
async fn pullcheck_agrees_with_containerd_and_podman() {
    let started = Instant::now();
    for dir in ABSENT_HELPER_PATH.split(':') {
        assert!(Path::new(dir).is_absolute(), "{dir}");
        assert!(
            !Path::new(dir)
                .join("docker-credential-pullcheck-absent-helper")
                .exists(),
            "{dir} holds the helper the absent-helper case needs absent"
        );
    }
    let containerd = Containerd::start().await.expect("containerd");
    let release = release_in(containerd.version()).expect("containerd's release");
    let podman = Podman::new().expect("podman");
    let env = Env::start().await;
    // The CRI plugin's config_path: each CRI case's hosts.toml files are copied here.
    let cri_hosts = temp_dir("runtimes-cri-hosts");
    let cri = Containerd::start_cri(&format!(
        "[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = {}\n",
        serde_json::Value::String(cri_hosts.to_string_lossy().into_owned())
    ))
    .await
    .expect("containerd with the CRI plugin");
    let mut rows = Vec::new();
    let only = std::env::var("PULLCHECK_RUNTIMES_ONLY").ok();
    for case in cases().into_iter().chain(held_out_cases()) {
        if only.as_deref().is_some_and(|o| o != case.rt.name()) {
            continue;
        }
        let image = env.fill(case.image);
        let (files, mut args) = Files::write(&env, &case, &image);
        // A case with a config.toml of its own gets a containerd of its own, started
        // before pullcheck runs so that both read the same file.
        let own = match case.setup.config_toml {
            None => None,
            Some(registry) => {
                let hosts = files.dir.join("hosts");
                let registry = env
                    .fill(registry)
                    .replace("{HOSTS}", &hosts.to_string_lossy());
                let daemon = Containerd::start_cri(&registry)
                    .await
                    .expect("containerd with the case's config.toml");
                let at = args.iter().position(|a| a == "--hosts-dir").unwrap();
                args.splice(
                    at..at + 2,
                    [
                        "--containerd-config".to_owned(),
                        daemon.config_file().to_string_lossy().into_owned(),
                    ],
                );
                Some(daemon)
            }
        };
        env.clear().await;
        let (pullcheck, pullcheck_served, detail, warnings) =
            run_pullcheck(&env, &args, &files.dir, case.setup.path, release).await;
        env.clear().await;
        let outcome: PullOutcome = match case.rt {
            Rt::Containerd => {
                let hosts = files.dir.join("hosts");
                let opts = CtrPull {
                    hosts_dir: Some(&hosts),
                    user: case.setup.creds,
                    platform: Some(case.platform),
                    plain_http: false,
                };
                tokio::time::timeout(Duration::from_secs(90), containerd.pull(&image, &opts))
                    .await
                    .expect("ctr within 90 s")
                    .expect("ctr runs")
            }
            Rt::Cri => {
                let cri = own.as_ref().unwrap_or(&cri);
                if own.is_none() {
                    replace_dir(&cri_hosts, &files.dir.join("hosts"));
                }
                let auth = case.setup.creds.map(|(u, p)| {
                    if case.setup.as_auth {
                        use base64::Engine as _;
                        CriAuth::Auth(
                            base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}")),
                        )
                    } else {
                        CriAuth::UserPassword(u.to_owned(), p.to_owned())
                    }
                });
                tokio::time::timeout(Duration::from_secs(90), cri.cri_pull(&image, auth.as_ref()))
                    .await
                    .expect("PullImage within 90 s")
                    .expect("the CRI socket answers")
            }
            Rt::Podman => {
                let conf = files.dir.join("registries.conf");
                let auth = files.dir.join("auth.json");
                let certs_d = files.dir.join("certs.d");
                let opts = PodmanPull {
                    registries_conf: Some(&conf),
                    auth_file: Some(&auth),
                    cert_dir: case.setup.ca.then_some(env.ca_dir.as_path()),
                    tls_verify: None,
                    platform: Some(case.platform),
                    certs_d: case.setup.certs_d.map(|_| certs_d.as_path()),
                    creds: case.setup.creds.filter(|_| case.setup.podman_creds),
                    path: case.setup.path,
                };
                tokio::time::timeout(Duration::from_secs(90), podman.pull(&image, &opts))
                    .await
                    .expect("podman within 90 s")
                    .expect("podman runs")
            }
        };
        if case.setup.path.is_some() {
            // The absent-helper case. podman 4.3.1 words every helper that `LookPath`
            // does not resolve to an absolute path, an absent one included, as
            // "NAME resolves to executable in current directory (./PATH)" (x/sys
            // `execabs` `fixCmd`, used by docker-credential-helpers' client): with an
            // absolute PATH that lacks the helper (checked above), PATH is the bare name
            // (a helper found through a relative entry shows its directory).
            assert!(
                outcome
                    .output
                    .contains("(./docker-credential-pullcheck-absent-helper)"),
                "{}: {}",
                case.name,
                outcome.output
            );
            // pullcheck's side is the helper's absence too (`HelperFailure::Missing`),
            // not another failure to start it: its whole detail, from the one renderer.
            let host = env.fill("{HTP}");
            assert_eq!(
                detail,
                format!(
                    "not checked: credential helper docker-credential-pullcheck-absent-helper \
                     (server {host}, configured in {} credHelpers[{host:?}]): program not found",
                    files.dir.join("auth.json").display()
                ),
                "{}",
                case.name
            );
        }
        let runtime_served = if outcome.result.is_ok() {
            env.served().await
        } else {
            None
        };
        let row = Row {
            case: case.name.to_owned(),
            rt: case.rt,
            pullcheck,
            warnings,
            expected_warnings: case.version_warnings,
            pullcheck_served,
            runtime: outcome.label().to_owned(),
            runtime_served,
            runtime_output: outcome.output.lines().last().unwrap_or_default().to_owned(),
            differs: case.differs,
            held_out: case.held_out,
        };
        rows.push(row);
    }
    if only.as_deref().is_none_or(|o| o == Rt::Cri.name()) {
        refused_by_both(&env).await;
    }
    let versions = format!(
        "{} (ctr, and CRI plugin); {}",
        containerd.version(),
        podman.version()
    );
    let elapsed = started.elapsed();
    let table = render(&rows, &versions, elapsed);
    if let Some(path) = std::env::var_os("PULLCHECK_RUNTIMES_TABLE") {
        std::fs::write(&path, &table).expect("write the table");
    }
    eprintln!("{table}");
    let mut wrong = Vec::new();
    for r in &rows {
        if r.warnings != r.expected_warnings {
            wrong.push(format!(
                "{:?} {}: pullcheck's version_warnings {:?}, expected {:?}",
                r.rt, r.case, r.warnings, r.expected_warnings
            ));
        }
        match (r.agrees(), r.differs) {
            (true, None) | (false, Some(_)) => {}
            (false, None) => wrong.push(format!(
                "{:?} {}: pullcheck {} (served by {:?}), runtime {} (served by {:?}): {}",
                r.rt,
                r.case,
                r.pullcheck,
                r.pullcheck_served,
                r.runtime,
                r.runtime_served,
                r.runtime_output
            )),
            (true, Some(_)) => wrong.push(format!(
                "{:?} {}: explained as differing, but both say {}",
                r.rt, r.case, r.runtime
            )),
        }
    }
    assert!(
        wrong.is_empty(),
        "{} rows disagree:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

fn render(rows: &[Row], versions: &str, elapsed: Duration) -> String {
    let (held, tuned): (Vec<&Row>, Vec<&Row>) = rows.iter().partition(|r| r.held_out);
    let agree = |rows: &[&Row]| rows.iter().filter(|r| r.agrees()).count();
    let mut s = String::new();
    s.push_str(&format!(
        "Runtimes: {versions}. {} comparisons, {} agree, {} differ (each explained); \
         the run took {:.0} s.\n\n",
        tuned.len(),
        agree(&tuned),
        tuned.len() - agree(&tuned),
        elapsed.as_secs_f64()
    ));
    table(&mut s, &tuned);
    if !held.is_empty() {
        s.push_str(&format!(
            "\n### held-out\n\nCases written after the table above agreed and before \
             pullcheck was changed for them (`held_out_cases` in the suite; how the first \
             run went is in the notes above): {} comparisons, {} agree, {} differ (each \
             explained).\n\n",
            held.len(),
            agree(&held),
            held.len() - agree(&held)
        ));
        table(&mut s, &held);
    }
    s
}

fn table(s: &mut String, rows: &[&Row]) {
    s.push_str("| runtime | case | pullcheck (status/reason) | served by | runtime | served by | agree |\n");
    s.push_str("|---|---|---|---|---|---|---|\n");
    for r in rows {
        let verdict = match (r.agrees(), r.differs) {
            (true, _) => "yes".to_owned(),
            (false, Some(why)) => format!("no: {why}"),
            (false, None) => format!("**NO** (`{}`)", r.runtime_output.replace('|', "\\|")),
        };
        let warned = if r.warnings.is_empty() {
            String::new()
        } else {
            format!(" warns `{}`", r.warnings.join("`, `"))
        };
        s.push_str(&format!(
            "| {} | {} | {}{warned} | {} | {} | {} | {} |\n",
            r.rt.name(),
            r.case,
            r.pullcheck,
            r.pullcheck_served.as_deref().unwrap_or("-"),
            r.runtime,
            r.runtime_served.as_deref().unwrap_or("-"),
            verdict
        ));
    }
}
