//! End-to-end: `Checker::check` and `explain` through the node's mirror configuration,
//! against real registries on loopback. An anonymous upstream registry holds the images;
//! a pull-through cache of it (`mirror_of`) is its mirror. The configuration is written
//! by each test in the three supported formats: a registries.conf (CRI-O), a containerd
//! hosts directory and a Docker `daemon.json`. The registries' access logs show which
//! endpoint was asked, and how (containerd's `?ns=`); a small path-rewriting gateway in
//! front of the mirror stands for a mirror served under another path (`override_path`).
//! The CLI's `explain --format json` with each flag is tested in
//! `crates/cli/tests/explain_mirrors.rs`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use pullcheck::credentials::NodeCredentials;
use pullcheck::explain::{Explanation, explain};
use pullcheck::input::parse_image_arg;
use pullcheck::mirrors::MirrorConfig;
use pullcheck::report::{ImageReport, MissingPart, Reason, Remedy, Report, Status};
use pullcheck::resolve::{Credentials, Resolver};
use pullcheck::{CheckOptions, Checker, CheckerOptions};
use pullcheck_testkit::{ClosedPort, ImageKind, PushedImage, Registry, RequestRecord};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

// ---- harness ----

/// A directory for one test's configuration files, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("pullcheck-mirrors-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }

    /// Writes `text` to `relative` (creating parent directories) and returns its path.
    fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.0.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// An anonymous upstream registry with `team/app:v1` (an OCI index), and a pull-through
/// cache of it.
struct Pair {
    upstream: Registry,
    mirror: Registry,
    image: PushedImage,
}

impl Pair {
    async fn start() -> Pair {
        let upstream = Registry::anonymous().await.unwrap();
        let image = upstream
            .push("team/app", "v1", ImageKind::OciIndex)
            .await
            .unwrap();
        let mirror = Registry::builder()
            .mirror_of(&upstream)
            .start()
            .await
            .unwrap();
        Pair {
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

    /// Forgets what both registries served so far (the harness's own pushes and probes
    /// are never listed).
    async fn clear(&self) {
        self.upstream.clear_requests().await.unwrap();
        self.mirror.clear_requests().await.unwrap();
    }
}

/// `127.0.0.1:PORT` where nothing listens: connections are refused.
fn closed_host() -> String {
    // Kept for the process's life: no other test's server can be given the port.
    let closed = ClosedPort::new();
    let host = closed.host();
    std::mem::forget(closed);
    host
}

fn resolver(mirrors: MirrorConfig) -> Resolver {
    Resolver {
        mirrors,
        insecure_registries: Vec::new(),
    }
}

/// Checks `images` (each `REF`, policy `not_present`) through `mirrors`, anonymously.
async fn check(mirrors: MirrorConfig, images: &[String]) -> Report {
    let checker = Checker::new(
        CheckerOptions::default(),
        resolver(mirrors),
        NodeCredentials::empty(),
    )
    .unwrap();
    let uses = images.iter().map(|i| parse_image_arg(i).unwrap()).collect();
    checker.check(uses, &CheckOptions::default()).await
}

/// Checks `reference` alone under `mirrors`: it must be present, answered by `registry`
/// (`host:port`). The report, for further assertions.
async fn check_present(mirrors: MirrorConfig, reference: &str, registry: &str) -> Report {
    let report = check(mirrors, &[reference.to_string()]).await;
    let i = image(&report, reference);
    assert_eq!(i.status, Status::Present, "{}", i.detail);
    assert_eq!(i.registry.as_deref(), Some(registry));
    report
}

fn image<'a>(report: &'a Report, reference: &str) -> &'a ImageReport {
    report
        .images
        .iter()
        .find(|i| i.reference == reference)
        .unwrap_or_else(|| panic!("{reference} not in the report:\n{}", report.to_json()))
}

/// Each endpoint asked about `i`, in order: (registry host, status, whether it is the
/// answer reported).
fn tried(i: &ImageReport) -> Vec<(String, Status, bool)> {
    i.attempts
        .iter()
        .map(|a| (a.registry.clone(), a.status, a.chosen))
        .collect()
}

/// The requests for manifest `reference` of `repository`, with any query.
fn manifest_requests<'a>(
    log: &'a [RequestRecord],
    repository: &str,
    reference: &str,
) -> Vec<&'a RequestRecord> {
    let path = format!("/v2/{repository}/manifests/{reference}");
    log.iter()
        .filter(|r| r.path == path || r.path.starts_with(&format!("{path}?")))
        .collect()
}

fn explain_json(input: &str, mirrors: &MirrorConfig) -> (Explanation, serde_json::Value) {
    let resolver = resolver(mirrors.clone());
    let explanation = explain(input, &resolver, &Credentials::anonymous());
    let json = serde_json::to_value(&explanation).unwrap();
    (explanation, json)
}

/// A registries.conf for the upstream's domain with one mirror, in `scratch`.
fn registries_conf(scratch: &Scratch, up: &str, mirror: &str, mirror_extra: &str) -> MirrorConfig {
    let path = scratch.write(
        "registries.conf",
        &format!(
            "[[registry]]\n\
             prefix = \"{up}\"\n\
             location = \"{up}\"\n\
             insecure = true\n\
             \n\
             [[registry.mirror]]\n\
             location = \"{mirror}\"\n\
             insecure = true\n\
             {mirror_extra}\n"
        ),
    );
    MirrorConfig::load_registries_conf(&path).unwrap()
}

/// A containerd hosts directory whose `hosts.toml` for `up` names `server` (upstream)
/// and one mirror host table `[host."<mirror_url>"]` with `mirror_body`.
fn hosts_dir(scratch: &Scratch, up: &str, mirror_url: &str, mirror_body: &str) -> MirrorConfig {
    scratch.write(
        &format!("certs.d/{up}/hosts.toml"),
        &format!(
            "server = \"http://{up}\"\n\
             \n\
             [host.\"{mirror_url}\"]\n\
             {mirror_body}\n"
        ),
    );
    MirrorConfig::load_hosts_dir(&scratch.path().join("certs.d")).unwrap()
}

/// A plain-HTTP gateway that serves a registry's `/v2/` API under another path, as a
/// mirror behind a path-routing proxy: `<prefix>rest` is forwarded as `/v2/rest`, with
/// the query; anything else answers 404. It records every request line it received.
/// One request per connection (it asks the registry to close after answering).
struct PathGateway {
    host: String,
    seen: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl PathGateway {
    async fn start(prefix: &'static str, registry: &Registry) -> PathGateway {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let host = listener.local_addr().unwrap().to_string();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let upstream = registry.host().to_string();
        let log = seen.clone();
        let task = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(forward(socket, prefix, upstream.clone(), log.clone()));
            }
        });
        PathGateway { host, seen, task }
    }

    /// `METHOD target` of every request received so far, before rewriting.
    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Drop for PathGateway {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn forward(
    mut client: TcpStream,
    prefix: &str,
    upstream: String,
    seen: Arc<Mutex<Vec<String>>>,
) {
    let mut head = Vec::new();
    let mut chunk = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match client.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&chunk[..n]),
        }
        // A TLS ClientHello (the client tries HTTPS first): this is plain HTTP.
        if head.first() == Some(&0x16) || head.len() > 64 * 1024 {
            return;
        }
    }
    let Ok(text) = std::str::from_utf8(&head) else {
        return;
    };
    let mut lines = text.split("\r\n");
    let mut request_line = lines.next().unwrap_or_default().split(' ');
    let (method, target, version) = (
        request_line.next().unwrap_or_default(),
        request_line.next().unwrap_or_default(),
        request_line.next().unwrap_or_default(),
    );
    seen.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(format!("{method} {target}"));
    let Some(rest) = target.strip_prefix(prefix) else {
        let _ = client
            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            .await;
        return;
    };
    let mut request = format!("{method} /v2/{rest} {version}\r\n");
    for line in lines.take_while(|l| !l.is_empty()) {
        if !line.to_ascii_lowercase().starts_with("connection:") {
            request.push_str(line);
            request.push_str("\r\n");
        }
    }
    request.push_str("Connection: close\r\n\r\n");
    let Ok(mut server) = TcpStream::connect(&upstream).await else {
        return;
    };
    if server.write_all(request.as_bytes()).await.is_ok() {
        let _ = tokio::io::copy(&mut server, &mut client).await;
    }
    let _ = client.shutdown().await;
}

// ---- registries.conf (CRI-O) ----

#[tokio::test]
async fn crio_present_through_the_mirror() {
    let pair = Pair::start().await;
    let scratch = Scratch::new("crio-present");
    let config = registries_conf(&scratch, pair.up(), pair.mir(), "");
    pair.clear().await;

    let reference = pair.image.reference();
    let report = check(config, std::slice::from_ref(&reference)).await;
    let i = image(&report, &reference);
    assert_eq!(i.status, Status::Present, "{}", i.detail);
    assert_eq!(i.registry.as_deref(), Some(pair.mir()), "{}", i.detail);
    assert_eq!(i.digest.as_deref(), Some(pair.image.digest.as_str()));
    // The first endpoint answered: no earlier attempt to list.
    assert!(i.attempts.is_empty(), "{:?}", i.attempts);

    let mirror_log = pair.mirror.requests().await.unwrap();
    let heads = manifest_requests(&mirror_log, "team/app", "v1");
    assert_eq!(heads.len(), 1, "{mirror_log:?}");
    assert_eq!((heads[0].method.as_str(), heads[0].status), ("HEAD", 200));
    // No ping: the first `HEAD` went out directly and the open mirror answered it.
    assert!(
        !mirror_log
            .iter()
            .any(|r| r.path == "/v2/" || r.path.starts_with("/v2/?")),
        "the mirror is not pinged: {mirror_log:?}"
    );
    assert_eq!(report.exit_code(), 0);
}

#[tokio::test]
async fn crio_mirror_down_the_primary_answers() {
    let pair = Pair::start().await;
    let dead = closed_host();
    let scratch = Scratch::new("crio-down");
    let config = registries_conf(&scratch, pair.up(), &dead, "");
    pair.clear().await;

    let reference = pair.image.reference();
    let report = check_present(config, &reference, pair.up()).await;
    let i = image(&report, &reference);
    assert_eq!(i.digest.as_deref(), Some(pair.image.digest.as_str()));
    // The mirror's failure is kept as an attempt.
    assert_eq!(
        tried(i),
        [
            (dead.clone(), Status::Unreachable, false),
            (pair.up().to_owned(), Status::Present, true)
        ]
    );

    let upstream_log = pair.upstream.requests().await.unwrap();
    let heads = manifest_requests(&upstream_log, "team/app", "v1");
    assert_eq!(heads.len(), 1, "{upstream_log:?}");
    assert_eq!((heads[0].method.as_str(), heads[0].status), ("HEAD", 200));
}

#[tokio::test]
async fn crio_a_tag_only_upstream_is_present() {
    // Through the pull-through cache: the mirror answers, fetching from upstream.
    let pair = Pair::start().await;
    let only_upstream = pair
        .upstream
        .push("team/app", "fresh", ImageKind::DockerManifest)
        .await
        .unwrap();
    let scratch = Scratch::new("crio-upstream-only");
    let config = registries_conf(&scratch, pair.up(), pair.mir(), "");
    pair.clear().await;

    let reference = only_upstream.reference();
    let report = check_present(config, &reference, pair.mir()).await;
    let i = image(&report, &reference);
    assert_eq!(i.digest.as_deref(), Some(only_upstream.digest.as_str()));
    let mirror_log = pair.mirror.requests().await.unwrap();
    assert_eq!(
        manifest_requests(&mirror_log, "team/app", "fresh").len(),
        1,
        "{mirror_log:?}"
    );
    // The mirror fetched it from upstream.
    let upstream_log = pair.upstream.requests().await.unwrap();
    assert!(
        !manifest_requests(&upstream_log, "team/app", "fresh").is_empty(),
        "{upstream_log:?}"
    );

    // A mirror that is a registry of its own, without the tag: it answers 404, and the
    // primary serves the tag.
    let other = Registry::anonymous().await.unwrap();
    other
        .push("team/app", "old", ImageKind::OciManifest)
        .await
        .unwrap();
    let scratch = Scratch::new("crio-upstream-only-plain");
    let config = registries_conf(&scratch, pair.up(), other.host(), "");
    pair.clear().await;
    let report = check_present(config, &reference, pair.up()).await;
    let i = image(&report, &reference);
    assert_eq!(
        tried(i),
        [
            (other.host().to_owned(), Status::Missing, false),
            (pair.up().to_owned(), Status::Present, true)
        ]
    );
    let other_log = other.requests().await.unwrap();
    let heads = manifest_requests(&other_log, "team/app", "fresh");
    assert_eq!(heads.len(), 1, "{other_log:?}");
    assert_eq!(heads[0].status, 404);
    let upstream_log = pair.upstream.requests().await.unwrap();
    let heads = manifest_requests(&upstream_log, "team/app", "fresh");
    assert_eq!(heads.len(), 1, "{upstream_log:?}");
    assert_eq!(heads[0].status, 200);
}

#[tokio::test]
async fn crio_a_missing_tag_lists_every_endpoint() {
    let pair = Pair::start().await;
    let scratch = Scratch::new("crio-missing");
    let config = registries_conf(&scratch, pair.up(), pair.mir(), "");
    pair.clear().await;

    let reference = format!("{}/team/app:v2", pair.up());
    let report = check(config, std::slice::from_ref(&reference)).await;
    let i = image(&report, &reference);
    assert_eq!(i.status, Status::Missing, "{}", i.detail);
    assert_eq!(i.missing, Some(MissingPart::Tag), "{}", i.detail);
    // Both answered 404: the first (the mirror) is reported, the primary's answer is an
    // attempt.
    assert_eq!(i.registry.as_deref(), Some(pair.mir()));
    assert_eq!(
        tried(i),
        [
            (pair.mir().to_owned(), Status::Missing, true),
            (pair.up().to_owned(), Status::Missing, false)
        ]
    );
    // The tag hint comes from the mirror's tag list, which it fetched from upstream.
    assert!(
        i.detail.starts_with(&format!(
            "tag v2 not found in team/app on {}; did you mean v1?",
            pair.mir()
        )),
        "{}",
        i.detail
    );
    for log in [
        pair.mirror.requests().await.unwrap(),
        pair.upstream.requests().await.unwrap(),
    ] {
        let heads = manifest_requests(&log, "team/app", "v2");
        assert!(
            heads.iter().any(|r| r.method == "HEAD" && r.status == 404),
            "{log:?}"
        );
    }
    assert_eq!(report.exit_code(), 1);
}

#[tokio::test]
async fn crio_a_definite_404_outranks_a_network_error() {
    let pair = Pair::start().await;
    let dead = closed_host();
    let scratch = Scratch::new("crio-404-vs-down");
    let config = registries_conf(&scratch, pair.up(), &dead, "");

    let reference = format!("{}/team/app:v404", pair.up());
    let report = check(config, std::slice::from_ref(&reference)).await;
    let i = image(&report, &reference);
    assert_eq!(i.status, Status::Missing, "{}", i.detail);
    assert_eq!(i.missing, Some(MissingPart::Tag));
    assert_eq!(i.registry.as_deref(), Some(pair.up()));
    assert_eq!(
        tried(i),
        [
            (dead.clone(), Status::Unreachable, false),
            (pair.up().to_owned(), Status::Missing, true)
        ]
    );
    assert_eq!(report.exit_code(), 1);
}

/// The new user's case: the only mirror lacks the tag and the primary cannot be reached.
/// containers/image fails that pull with the primary's error (`newImageSource`,
/// docker/docker_image_src.go), and a node that reaches the primary would pull the
/// image: unverified, not missing.
#[tokio::test]
async fn crio_a_mirrors_404_does_not_outrank_an_unreachable_primary() {
    let pair = Pair::start().await;
    let dead = closed_host();
    let scratch = Scratch::new("crio-mirror-404-primary-down");
    let config = registries_conf(&scratch, &dead, pair.mir(), "");

    let reference = format!("{dead}/team/app:v404");
    let report = check(config, std::slice::from_ref(&reference)).await;
    let i = image(&report, &reference);
    assert_eq!(i.status, Status::Unreachable, "{}", i.detail);
    assert_eq!(i.reason, Reason::ConnectionRefused);
    assert_eq!(i.registry.as_deref(), Some(dead.as_str()));
    assert_eq!(
        tried(i),
        [
            (pair.mir().to_owned(), Status::Missing, false),
            (dead.clone(), Status::Unreachable, true)
        ]
    );
    assert_eq!(i.attempts[0].missing, Some(MissingPart::Tag));
    assert_eq!(report.exit_code(), 3);
}

#[tokio::test]
async fn crio_a_blocked_prefix_sends_no_request() {
    let pair = Pair::start().await;
    let (up, mir) = (pair.up(), pair.mir());
    let scratch = Scratch::new("crio-blocked");
    let path = scratch.write(
        "registries.conf",
        &format!(
            "[[registry]]\n\
             prefix = \"{up}\"\n\
             location = \"{up}\"\n\
             insecure = true\n\
             [[registry.mirror]]\n\
             location = \"{mir}\"\n\
             insecure = true\n\
             \n\
             [[registry]]\n\
             prefix = \"{up}/private\"\n\
             location = \"{up}/private\"\n\
             blocked = true\n"
        ),
    );
    let config = MirrorConfig::load_registries_conf(&path).unwrap();
    pair.clear().await;

    let blocked = format!("{up}/private/app:v1");
    let allowed = pair.image.reference();
    let report = check(config.clone(), &[blocked.clone(), allowed.clone()]).await;
    let b = image(&report, &blocked);
    assert_eq!(b.status, Status::Blocked, "{}", b.detail);
    assert!(b.detail.contains("no request was sent"), "{}", b.detail);
    assert!(b.detail.contains("blocked = true"), "{}", b.detail);
    assert_eq!(image(&report, &allowed).status, Status::Present);
    assert_eq!(report.exit_code(), 1);

    // The registries saw the allowed image only.
    for log in [
        pair.mirror.requests().await.unwrap(),
        pair.upstream.requests().await.unwrap(),
    ] {
        assert!(!log.is_empty());
        assert!(log.iter().all(|r| !r.path.contains("private")), "{log:?}");
    }

    // explain says so, with no endpoint.
    let (e, json) = explain_json(&blocked, &config);
    assert!(e.endpoints.is_empty());
    let refused = json["refused"].as_str().unwrap();
    assert!(refused.starts_with("blocked:"), "{refused}");
    assert!(refused.contains("private"), "{refused}");
}

#[tokio::test]
async fn crio_a_blocked_primary_still_tries_its_mirror() {
    // containers/image checks `blocked` per source: the mirror's rewritten reference is
    // not blocked, so it is asked; the blocked primary is not. (The plain-HTTP loopback
    // mirror needs `insecure = true`, as under podman and CRI-O.)
    let pair = Pair::start().await;
    let (up, mir) = (pair.up(), pair.mir());
    let scratch = Scratch::new("crio-blocked-primary");
    let path = scratch.write(
        "registries.conf",
        &format!(
            "[[registry]]\n\
             prefix = \"{up}\"\n\
             location = \"{up}\"\n\
             blocked = true\n\
             [[registry.mirror]]\n\
             location = \"{mir}\"\n\
             insecure = true\n"
        ),
    );
    let config = MirrorConfig::load_registries_conf(&path).unwrap();
    let reference = pair.image.reference();
    let (e, _) = explain_json(&reference, &config);
    assert_eq!(e.endpoints.len(), 1, "{e:?}");
    assert_eq!(e.endpoints[0].url, format!("https://{mir}/v2/"));

    let missing = format!("{up}/team/app:v404");
    pair.clear().await;
    let report = check(config, &[reference.clone(), missing.clone()]).await;
    let i = image(&report, &reference);
    assert_eq!(i.status, Status::Present, "{}", i.detail);
    assert_eq!(i.registry.as_deref(), Some(mir));
    let m = image(&report, &missing);
    assert_eq!(m.status, Status::Missing, "{}", m.detail);
    assert_eq!(m.registry.as_deref(), Some(mir));
    // Only the mirror was asked.
    assert!(m.attempts.is_empty(), "{:?}", m.attempts);
}

#[tokio::test]
async fn crio_digest_only_mirror_skips_tags() {
    let pair = Pair::start().await;
    let scratch = Scratch::new("crio-digest-only");
    let config = registries_conf(
        &scratch,
        pair.up(),
        pair.mir(),
        "pull-from-mirror = \"digest-only\"",
    );
    pair.clear().await;

    // A tag: the mirror is not asked at all.
    let by_tag = pair.image.reference();
    check_present(config.clone(), &by_tag, pair.up()).await;
    let mirror_log = pair.mirror.requests().await.unwrap();
    assert!(mirror_log.is_empty(), "{mirror_log:?}");

    // A digest: the mirror answers.
    let by_digest = pair.image.digest_reference();
    check_present(config.clone(), &by_digest, pair.mir()).await;
    let mirror_log = pair.mirror.requests().await.unwrap();
    let heads = manifest_requests(&mirror_log, "team/app", &pair.image.digest);
    assert_eq!(heads.len(), 1, "{mirror_log:?}");
    assert_eq!((heads[0].method.as_str(), heads[0].status), ("HEAD", 200));

    // explain agrees: one endpoint for the tag, two for the digest.
    let (tag, _) = explain_json(&by_tag, &config);
    assert_eq!(tag.endpoints.len(), 1);
    assert!(!tag.endpoints[0].mirror);
    let (digest, _) = explain_json(&by_digest, &config);
    assert_eq!(digest.endpoints.len(), 2);
    assert!(
        digest.endpoints[0]
            .rule
            .contains("pull-from-mirror=\"digest-only\""),
        "{}",
        digest.endpoints[0].rule
    );
}

#[tokio::test]
async fn crio_explain_lists_the_endpoints_in_order() {
    let pair = Pair::start().await;
    let scratch = Scratch::new("crio-explain");
    let config = registries_conf(&scratch, pair.up(), pair.mir(), "");
    let conf_path = scratch.path().join("registries.conf").display().to_string();

    let (e, json) = explain_json(&pair.image.reference(), &config);
    assert!(e.ok);
    assert!(e.refused.is_none());
    let endpoints = json["endpoints"].as_array().unwrap();
    assert_eq!(endpoints.len(), 2, "{json}");
    let (mirror, primary) = (&endpoints[0], &endpoints[1]);
    assert_eq!(mirror["url"], format!("https://{}/v2/", pair.mir()));
    assert_eq!(primary["url"], format!("https://{}/v2/", pair.up()));
    assert_eq!(mirror["mirror"], true);
    assert_eq!(primary["mirror"], false);
    // `insecure = true` on both.
    assert_eq!(mirror["insecure"], true);
    assert_eq!(primary["insecure"], true);
    assert_eq!(mirror["repository"], "team/app");
    let mirror_rule = mirror["rule"].as_str().unwrap();
    assert!(mirror_rule.contains(&conf_path), "{mirror_rule}");
    assert!(mirror_rule.contains("mirror 1"), "{mirror_rule}");
    let primary_rule = primary["rule"].as_str().unwrap();
    assert!(primary_rule.contains("(primary)"), "{primary_rule}");
    // CRI-O looks up credentials for the mirror's own host, not the pull secrets.
    let mirror_creds = mirror["credential_rule"].as_str().unwrap();
    assert!(mirror_creds.contains(pair.mir()), "{mirror_creds}");
    assert!(
        json["mode"]
            .as_str()
            .unwrap()
            .starts_with("registries.conf"),
        "{json}"
    );
}

// ---- containerd hosts.toml ----

#[tokio::test]
async fn containerd_present_through_the_mirror() {
    let pair = Pair::start().await;
    let scratch = Scratch::new("containerd-present");
    let config = hosts_dir(
        &scratch,
        pair.up(),
        &format!("http://{}", pair.mir()),
        "capabilities = [\"pull\", \"resolve\"]",
    );
    pair.clear().await;

    let reference = pair.image.reference();
    let report = check(config.clone(), std::slice::from_ref(&reference)).await;
    let i = image(&report, &reference);
    assert_eq!(i.status, Status::Present, "{}", i.detail);
    assert_eq!(i.registry.as_deref(), Some(pair.mir()), "{}", i.detail);
    assert_eq!(i.digest.as_deref(), Some(pair.image.digest.as_str()));

    // containerd asks a mirror with ?ns=<the image's registry>; the server without.
    let ns = format!("ns={}", pair.up().replace(':', "%3A"));
    let mirror_log = pair.mirror.requests().await.unwrap();
    let heads = manifest_requests(&mirror_log, "team/app", "v1");
    assert_eq!(heads.len(), 1, "{mirror_log:?}");
    assert_eq!((heads[0].method.as_str(), heads[0].status), ("HEAD", 200));
    assert_eq!(heads[0].path, format!("/v2/team/app/manifests/v1?{ns}"));
    // No ping: the first `HEAD` (with ns) went out directly.
    assert!(
        !mirror_log
            .iter()
            .any(|r| r.path == "/v2/" || r.path.starts_with("/v2/?")),
        "the mirror is not pinged: {mirror_log:?}"
    );

    // A tag only the server knows: the mirror (asked with ns) says 404, then the
    // server is asked without ns.
    let missing = format!("{}/team/app:v404", pair.up());
    pair.clear().await;
    let report = check(config.clone(), std::slice::from_ref(&missing)).await;
    let m = image(&report, &missing);
    assert_eq!(m.status, Status::Missing, "{}", m.detail);
    let mirror_log = pair.mirror.requests().await.unwrap();
    let heads = manifest_requests(&mirror_log, "team/app", "v404");
    assert!(
        heads
            .iter()
            .any(|r| r.method == "HEAD" && r.path.ends_with(&format!("?{ns}"))),
        "{mirror_log:?}"
    );
    let upstream_log = pair.upstream.requests().await.unwrap();
    let heads = manifest_requests(&upstream_log, "team/app", "v404");
    assert!(
        heads
            .iter()
            .any(|r| r.method == "HEAD" && r.path == "/v2/team/app/manifests/v404"),
        "{upstream_log:?}"
    );

    // explain: the mirror host (asked with ?ns=), then the server.
    let (_, json) = explain_json(&reference, &config);
    let endpoints = json["endpoints"].as_array().unwrap();
    assert_eq!(endpoints.len(), 2, "{json}");
    assert_eq!(endpoints[0]["url"], format!("http://{}/v2/", pair.mir()));
    assert_eq!(endpoints[1]["url"], format!("http://{}/v2/", pair.up()));
    let rule = endpoints[0]["rule"].as_str().unwrap();
    assert!(
        rule.contains(&format!("[host.\"http://{}\"]", pair.mir())),
        "{rule}"
    );
    assert!(rule.contains("hosts.toml"), "{rule}");
    let server_rule = endpoints[1]["rule"].as_str().unwrap();
    assert!(server_rule.contains("server"), "{server_rule}");
    // The pull secrets matched by the image's registry go to the mirror too; one keyed
    // for the mirror's host is not used (containerd issue 10996).
    let creds = endpoints[0]["credential_rule"].as_str().unwrap();
    assert!(creds.contains("10996"), "{creds}");
    assert!(creds.contains("to every host of hosts.toml"), "{creds}");
}

#[tokio::test]
async fn containerd_mirror_down_the_server_answers() {
    let pair = Pair::start().await;
    let dead = closed_host();
    let scratch = Scratch::new("containerd-down");
    let config = hosts_dir(&scratch, pair.up(), &format!("http://{dead}"), "");
    pair.clear().await;

    let reference = pair.image.reference();
    let missing = format!("{}/team/app:v404", pair.up());
    let report = check(config, &[reference.clone(), missing.clone()]).await;
    let i = image(&report, &reference);
    assert_eq!(i.status, Status::Present, "{}", i.detail);
    assert_eq!(i.registry.as_deref(), Some(pair.up()));
    assert_eq!(
        tried(i),
        [
            (dead.clone(), Status::Unreachable, false),
            (pair.up().to_owned(), Status::Present, true)
        ]
    );
    let m = image(&report, &missing);
    assert_eq!(m.status, Status::Missing, "{}", m.detail);
    assert_eq!(m.registry.as_deref(), Some(pair.up()));
    assert_eq!(
        tried(m),
        [
            (dead.clone(), Status::Unreachable, false),
            (pair.up().to_owned(), Status::Missing, true)
        ]
    );
}

/// A mirror and its server that answer alike (a missing tag with the same close tags, a
/// missing repository, a refused connection) are one answer: the facts of both attempts
/// are equal, and the worded detail names the mirror's answer once, the server's as
/// `same answer`, though each attempt's own detail names its host.
#[tokio::test]
async fn containerd_mirror_and_server_answering_alike_are_worded_once() {
    let pair = Pair::start().await;
    let scratch = Scratch::new("containerd-alike");
    let config = hosts_dir(&scratch, pair.up(), &format!("http://{}", pair.mir()), "");
    let tag = format!("{}/team/app:v2", pair.up());
    let repository = format!("{}/team/nothing:v1", pair.up());
    let mut report = check(config, &[tag.clone(), repository.clone()]).await;

    let (up, mir) = (pair.up().to_owned(), pair.mir().to_owned());
    for (reference, missing) in [
        (&tag, MissingPart::Tag),
        (&repository, MissingPart::Repository),
    ] {
        let i = image(&report, reference);
        assert_eq!(i.status, Status::Missing, "{}", i.detail);
        assert_eq!(i.missing, Some(missing), "{}", i.detail);
        assert_eq!(
            tried(i),
            [
                (mir.clone(), Status::Missing, true),
                (up.clone(), Status::Missing, false)
            ]
        );
        let (m, u) = (&i.attempts[0], &i.attempts[1]);
        assert_eq!(
            (m.reason, m.missing, &m.close_tags),
            (u.reason, u.missing, &u.close_tags)
        );
        assert_ne!(m.detail, u.detail, "each attempt's detail names its host");
    }
    assert_eq!(image(&report, &tag).attempts[1].close_tags, ["v1"]);

    report.word_attempts();
    assert_eq!(
        image(&report, &tag).detail,
        format!(
            "tag v2 not found in team/app on {mir}; did you mean v1?; also tried: {up}: same answer"
        )
    );
    let detail = &image(&report, &repository).detail;
    assert!(
        detail.ends_with(&format!("; also tried: {up}: same answer")),
        "{detail}"
    );
    assert_eq!(detail.matches("not found").count(), 1, "{detail}");

    // Two refused endpoints: the server and its mirror both closed.
    let (dead_up, dead_mir) = (closed_host(), closed_host());
    let scratch = Scratch::new("containerd-alike-refused");
    let config = hosts_dir(&scratch, &dead_up, &format!("http://{dead_mir}"), "");
    let reference = format!("{dead_up}/team/app:v1");
    let mut report = check(config, std::slice::from_ref(&reference)).await;
    let i = image(&report, &reference);
    assert_eq!(i.status, Status::Unreachable, "{}", i.detail);
    assert_eq!(
        tried(i),
        [
            (dead_mir.clone(), Status::Unreachable, true),
            (dead_up.clone(), Status::Unreachable, false)
        ]
    );
    assert_eq!(i.attempts[0].reason, i.attempts[1].reason);
    report.word_attempts();
    let detail = &image(&report, &reference).detail;
    assert!(
        detail.ends_with(&format!("; also tried: {dead_up}: same answer")),
        "{detail}"
    );
    assert_eq!(detail.matches("also tried").count(), 1, "{detail}");
}

/// A Go TLS registry (docker-registry) holding `team/app:v1`, with a CA made under
/// `scratch` and given to nobody.
async fn untrusted_tls_registry(scratch: &Scratch) -> Registry {
    let files = pullcheck_testkit::runtime::make_tls_files(scratch.path()).unwrap();
    let registry = Registry::builder().tls(files).start().await.unwrap();
    registry
        .push("team/app", "v1", ImageKind::OciManifest)
        .await
        .unwrap();
    registry
}

/// Asserts that `i` is `denied` / `tls_untrusted` with the two remedies for `host`
/// (trust its CA, or allow unverified TLS) as data; returns `i`.
fn assert_untrusted<'a>(i: &'a ImageReport, host: &str) -> &'a ImageReport {
    assert_eq!(
        (i.status, i.reason),
        (Status::Denied, Reason::TlsUntrusted),
        "{}",
        i.detail
    );
    assert_eq!(
        i.remedies,
        [
            Remedy::TrustCa {
                host: host.to_owned()
            },
            Remedy::AllowInsecure {
                host: host.to_owned()
            }
        ]
    );
    i
}

/// A TLS registry whose CA is not given, named `https://` by its hosts.toml: the row is
/// `denied`, reason `tls_untrusted`, with the remedies as data, and its detail says so
/// from the host and the certificate problem (not the registry client's "unreachable").
#[tokio::test]
async fn containerd_an_untrusted_https_server_is_denied_in_its_own_words() {
    let scratch = Scratch::new("containerd-untrusted");
    let registry = untrusted_tls_registry(&scratch).await;
    let host = registry.host().to_owned();
    scratch.write(
        &format!("certs.d/{host}/hosts.toml"),
        &format!("server = \"https://{host}\"\n"),
    );
    let config = MirrorConfig::load_hosts_dir(&scratch.path().join("certs.d")).unwrap();
    let reference = format!("{host}/team/app:v1");
    let report = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        check(config, std::slice::from_ref(&reference)),
    )
    .await
    .expect("bounded");
    let i = assert_untrusted(image(&report, &reference), &host);
    assert_eq!(
        i.detail,
        format!(
            "https certificate of registry {host} not trusted: signed by an unknown \
             authority; the registry as reached cannot be shown to be the one named"
        )
    );
    assert_eq!(report.exit_code(), 1);
}

/// The same Go TLS registry on loopback with no mirror configuration, where plain HTTP
/// is allowed as Docker allows it for loopback: its certificate is an answer, so the row
/// is `denied` / `tls_untrusted` with the remedies, not the `400` its TLS port gives a
/// plain-HTTP request (Go's "Client sent an HTTP request to an HTTPS server"), and no
/// plain request is sent.
#[tokio::test]
async fn an_untrusted_loopback_tls_registry_is_denied_without_a_plain_http_fallback() {
    let scratch = Scratch::new("loopback-untrusted");
    let registry = untrusted_tls_registry(&scratch).await;
    let host = registry.host().to_owned();
    let reference = format!("{host}/team/app:v1");
    let before = registry.requests().await.unwrap().len();
    let report = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        check(MirrorConfig::default(), std::slice::from_ref(&reference)),
    )
    .await
    .expect("bounded");
    assert_untrusted(image(&report, &reference), &host);
    // Neither a TLS request (the handshake failed) nor a plain one reached the registry.
    assert_eq!(registry.requests().await.unwrap().len(), before);
    assert_eq!(report.exit_code(), 1);
}

#[tokio::test]
async fn containerd_a_pull_only_mirror_serves_digests_only() {
    // A tag needs `resolve`; a host with `pull` alone is asked for digests only.
    let pair = Pair::start().await;
    let scratch = Scratch::new("containerd-pull-only");
    let config = hosts_dir(
        &scratch,
        pair.up(),
        &format!("http://{}", pair.mir()),
        "capabilities = [\"pull\"]",
    );
    pair.clear().await;

    let by_tag = pair.image.reference();
    check_present(config.clone(), &by_tag, pair.up()).await;
    let mirror_log = pair.mirror.requests().await.unwrap();
    assert!(mirror_log.is_empty(), "{mirror_log:?}");

    let by_digest = pair.image.digest_reference();
    check_present(config, &by_digest, pair.mir()).await;
    let mirror_log = pair.mirror.requests().await.unwrap();
    assert_eq!(
        manifest_requests(&mirror_log, "team/app", &pair.image.digest).len(),
        1,
        "{mirror_log:?}"
    );
}

#[tokio::test]
async fn containerd_override_path_asks_the_configured_path() {
    // The mirror serves the API under /custom/prefix/ (a path-routing gateway in
    // front of the pull-through cache); override_path uses that path as it is.
    let pair = Pair::start().await;
    let gateway = PathGateway::start("/custom/prefix/", &pair.mirror).await;
    let scratch = Scratch::new("containerd-override-path");
    let config = hosts_dir(
        &scratch,
        pair.up(),
        &format!("http://{}/custom/prefix", gateway.host),
        "capabilities = [\"pull\", \"resolve\"]\noverride_path = true",
    );
    let (_, json) = explain_json(&pair.image.reference(), &config);
    assert_eq!(
        json["endpoints"][0]["url"],
        format!("http://{}/custom/prefix/", gateway.host),
        "{json}"
    );
    pair.clear().await;

    let reference = pair.image.reference();
    let report = check(config, std::slice::from_ref(&reference)).await;
    let i = image(&report, &reference);
    assert_eq!(i.status, Status::Present, "{}", i.detail);
    assert_eq!(
        i.registry.as_deref(),
        Some(gateway.host.as_str()),
        "{}",
        i.detail
    );
    assert_eq!(i.digest.as_deref(), Some(pair.image.digest.as_str()));

    let ns = format!("ns={}", pair.up().replace(':', "%3A"));
    assert_eq!(
        gateway.seen(),
        [format!("HEAD /custom/prefix/team/app/manifests/v1?{ns}")]
    );
    // Through the gateway, the mirror served it (the server's own log cannot tell:
    // the pull-through cache asks it too), and it was the first endpoint asked.
    let mirror_log = pair.mirror.requests().await.unwrap();
    assert_eq!(
        manifest_requests(&mirror_log, "team/app", "v1").len(),
        1,
        "{mirror_log:?}"
    );
    assert!(i.attempts.is_empty(), "{:?}", i.attempts);
}

// ---- Docker daemon.json ----

#[tokio::test]
async fn docker_registry_mirrors_apply_to_docker_hub_only() {
    let pair = Pair::start().await;
    // A Docker Hub image, served to the mirror by its upstream.
    let hub = pair
        .upstream
        .push(
            "library/pullcheck-mirror-test",
            "1.0",
            ImageKind::DockerManifestList,
        )
        .await
        .unwrap();
    let scratch = Scratch::new("docker");
    let path = scratch.write(
        "daemon.json",
        &format!(r#"{{"registry-mirrors": ["http://{}"]}}"#, pair.mir()),
    );
    let config = MirrorConfig::load_docker_daemon(&path).unwrap();
    pair.clear().await;

    // Not Docker Hub: the mirror is ignored.
    let reference = pair.image.reference();
    check_present(config.clone(), &reference, pair.up()).await;
    let mirror_log = pair.mirror.requests().await.unwrap();
    assert!(mirror_log.is_empty(), "{mirror_log:?}");
    let (e, _) = explain_json(&reference, &config);
    assert_eq!(e.endpoints.len(), 1);
    assert!(
        e.endpoints[0].rule.contains("not Docker Hub"),
        "{}",
        e.endpoints[0].rule
    );

    // Docker Hub: the mirror first, then registry-1.docker.io.
    let (e, json) = explain_json("pullcheck-mirror-test:1.0", &config);
    let endpoints = json["endpoints"].as_array().unwrap();
    assert_eq!(endpoints.len(), 2, "{json}");
    assert_eq!(endpoints[0]["url"], format!("http://{}/v2/", pair.mir()));
    assert_eq!(endpoints[0]["mirror"], true);
    assert_eq!(endpoints[0]["repository"], "library/pullcheck-mirror-test");
    assert!(
        endpoints[0]["rule"]
            .as_str()
            .unwrap()
            .contains("registry-mirrors[0]"),
        "{json}"
    );
    assert_eq!(endpoints[1]["url"], "https://registry-1.docker.io/v2/");
    assert_eq!(endpoints[1]["mirror"], false);
    // The Hub credentials go to the mirror too.
    assert!(
        e.endpoints[0].credential_rule.contains("docker.io"),
        "{}",
        e.endpoints[0].credential_rule
    );

    // And the check gets its answer from the mirror, which asks its upstream.
    let report = check(config, &["pullcheck-mirror-test:1.0".to_string()]).await;
    let i = image(&report, "pullcheck-mirror-test:1.0");
    assert_eq!(i.status, Status::Present, "{}", i.detail);
    assert_eq!(i.registry.as_deref(), Some(pair.mir()));
    assert_eq!(i.digest.as_deref(), Some(hub.digest.as_str()));
    let mirror_log = pair.mirror.requests().await.unwrap();
    assert_eq!(
        manifest_requests(&mirror_log, "library/pullcheck-mirror-test", "1.0").len(),
        1,
        "{mirror_log:?}"
    );
}
