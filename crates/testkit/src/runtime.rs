//! The real container runtimes as judges: Debian's `containerd` (driven by `ctr`) and
//! `podman` (containers/image, the library CRI-O pulls with), with every state and
//! storage directory under a [`TempDir`] and only loopback references and configs.
//!
//! - [`Containerd::start`] writes a `config.toml` (`root`, `state`, `[grpc] address` in
//!   its own directory, the CRI plugin disabled) and starts `containerd --config` as a
//!   child that dies with the test process; [`Containerd::pull`] runs
//!   `ctr --address SOCK images pull --snapshotter native [--hosts-dir DIR]
//!   [--user U:P] [--platform P] REF`, containerd's client-side resolver (the
//!   `hosts.toml` rules of `remotes/docker/config` in 1.6, the Debian package's release).
//! - [`Podman::new`] makes a storage root; [`Podman::pull`] runs `podman --root …
//!   --runroot … --storage-driver vfs pull` with `CONTAINERS_REGISTRIES_CONF`, `--authfile`,
//!   `--cert-dir`, `--tls-verify` and `--platform` as given, `HOME` and `XDG_RUNTIME_DIR`
//!   in its own directory so that no user file of the machine is read.
//!
//! - [`Containerd::start_cri`] starts it with the CRI plugin on instead, and
//!   [`Containerd::cri_pull`] pulls through `ImageService.PullImage` as the kubelet does
//!   ([`crate::cri`]): the CRI plugin's own resolver setup, with its credential rules
//!   and the config's `registry` section (`config_path`, `mirrors`, `configs`).
//!
//! Each pull is bounded ([`PULL_TIMEOUT`]) and killed when its future is dropped. The
//! outcome is a [`PullOutcome`]: success, or the failure's [`FailureKind`] read from
//! what the runtime printed (these are the runtimes' own messages, matched here in the
//! harness only to sort failures for comparison).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::Error;
use crate::process::{Process, openssl_self_signed, run_tool};
use crate::registry::TlsFiles;
use crate::tempdir::TempDir;

/// How long one runtime pull may take before it is killed and reported as an error.
pub const PULL_TIMEOUT: Duration = Duration::from_secs(60);

/// The `containerd` binary of Debian's `containerd` package.
pub const CONTAINERD_BINARY: &str = "/usr/bin/containerd";
/// Its client, `ctr`.
pub const CTR_BINARY: &str = "/usr/bin/ctr";
/// The `podman` binary of Debian's `podman` package.
pub const PODMAN_BINARY: &str = "/usr/bin/podman";

/// What kind of failure a pull ended in, as comparable across runtimes and pullcheck.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureKind {
    /// The manifest (tag, digest or repository) does not exist: containerd `not found`,
    /// containers/image `manifest unknown`.
    NotFound,
    /// 401 or 403: containerd `unexpected status … 401 Unauthorized`, `authorization
    /// failed`; containers/image `unauthorized`, `authentication required`.
    Unauthorized,
    /// TLS failed or the server spoke plain HTTP to an HTTPS client: `x509:`, `tls:`,
    /// `server gave HTTP response to HTTPS client`.
    Tls,
    /// Nothing answered: `connection refused`, `no such host`, a timeout.
    Unreachable,
    /// No manifest for the asked platform in an index: containerd `no match for
    /// platform`, containers/image `no image found in manifest list`.
    Platform,
    /// containers/image refused a `blocked = true` registry.
    Blocked,
    /// The credentials could not be had: a credential helper named in the auth file
    /// failed or is not installed (containers/image `error getting credentials`).
    Credentials,
    /// The registry answered with an HTTP status that is none of the above (400, 5xx):
    /// containerd `failed with status code … 400 Bad Request`, containers/image
    /// `received unexpected HTTP status: 500`.
    ServerError,
    /// Anything else (the message is in [`PullOutcome::output`]).
    Other,
}

impl FailureKind {
    /// A short lower-case name for tables: `not_found`, `unauthorized`, `tls`,
    /// `unreachable`, `platform`, `blocked`, `credentials`, `server_error`, `other`.
    pub fn name(self) -> &'static str {
        match self {
            FailureKind::NotFound => "not_found",
            FailureKind::Unauthorized => "unauthorized",
            FailureKind::Tls => "tls",
            FailureKind::Unreachable => "unreachable",
            FailureKind::Platform => "platform",
            FailureKind::Blocked => "blocked",
            FailureKind::Credentials => "credentials",
            FailureKind::ServerError => "server_error",
            FailureKind::Other => "other",
        }
    }
}

/// How one runtime pull ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullOutcome {
    /// `Ok` when the runtime pulled the image, else what kind of failure it printed.
    pub result: Result<(), FailureKind>,
    /// What the runtime printed on stderr (and stdout), trimmed to the last 4 KiB.
    pub output: String,
    /// How long the pull took.
    pub elapsed: Duration,
}

impl PullOutcome {
    /// `pulled` or the failure kind's name.
    pub fn label(&self) -> &'static str {
        match self.result {
            Ok(()) => "pulled",
            Err(kind) => kind.name(),
        }
    }
}

/// Sorts a runtime's error output into a [`FailureKind`]; the most specific message
/// wins (a pull that tried several hosts prints each host's error).
pub fn classify_failure(output: &str) -> FailureKind {
    // The final error (`ctr: …`, `Error: …`) when there is one: the lines before it are
    // the hosts tried on the way.
    let last = final_error(output).unwrap_or(output);
    let o = last.to_ascii_lowercase();
    let has = |needles: &[&str]| needles.iter().any(|n| o.contains(n));
    if has(&["blocked"]) && has(&["registry"]) {
        FailureKind::Blocked
    } else if has(&["error getting credentials"]) {
        FailureKind::Credentials
    } else if has(&[
        "no match for platform",
        "no image found in manifest list",
        "no image found in image index",
        "no matching manifest",
    ]) {
        FailureKind::Platform
    } else if has(&[
        "401 unauthorized",
        "403 forbidden",
        "unauthorized",
        "authentication required",
        "authorization failed",
        "denied",
    ]) {
        FailureKind::Unauthorized
    } else if has(&[
        "x509:",
        "tls:",
        "certificate",
        "http response to https client",
    ]) {
        FailureKind::Tls
    } else if has(&["not found", "manifest unknown", "name unknown"]) {
        FailureKind::NotFound
    } else if has(&[
        "connection refused",
        "no such host",
        "i/o timeout",
        "connection reset",
        "dial tcp",
    ]) {
        FailureKind::Unreachable
    } else if has(&[
        "400 bad request",
        "500 internal server error",
        "502 bad gateway",
        "503 service unavailable",
        "unexpected http status",
    ]) {
        FailureKind::ServerError
    } else {
        FailureKind::Other
    }
}

/// The runtime's final error (from its last `ctr: …` or `Error: …` line to the end:
/// containers/image continues a registry's error list on the next lines), if any.
fn final_error(output: &str) -> Option<&str> {
    let mut at = None;
    let mut offset = 0;
    for line in output.split_inclusive('\n') {
        if line.starts_with("ctr: ") || line.starts_with("Error: ") {
            at = Some(offset);
        }
        offset += line.len();
    }
    at.map(|i| output[i..].trim_end())
}

/// The first line a runtime binary prints for `--version`, or `None` when it is not
/// installed (the suite then says `SKIPPED`).
pub fn version_of(binary: &str) -> Option<String> {
    if !Path::new(binary).exists() {
        return None;
    }
    let out = std::process::Command::new(binary)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().next().map(|l| l.trim().to_owned())
}

/// Runs `program args` with `envs`, bounded by [`PULL_TIMEOUT`], and sorts the result.
async fn run_pull(
    program: &str,
    args: &[String],
    envs: &[(&str, &Path)],
    cwd: &Path,
) -> Result<PullOutcome, Error> {
    let started = Instant::now();
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (k, v) in envs {
        command.env(k, v);
    }
    // The credentials of `--creds` and `--user` are never shown.
    let masked: Vec<&str> = args
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let secret = i > 0 && matches!(args[i - 1].as_str(), "--creds" | "--user");
            if secret { "***" } else { a.as_str() }
        })
        .collect();
    let shown = format!("{program} {}", masked.join(" "));
    let child = command
        .spawn()
        .map_err(|e| Error::io(format!("running {shown}"), e))?;
    let output = match tokio::time::timeout(PULL_TIMEOUT, child.wait_with_output()).await {
        Ok(out) => out.map_err(|e| Error::io(format!("running {shown}"), e))?,
        Err(_) => {
            return Ok(PullOutcome {
                result: Err(FailureKind::Other),
                output: format!("{shown}: killed after {}s", PULL_TIMEOUT.as_secs()),
                elapsed: started.elapsed(),
            });
        }
    };
    let mut text = String::from_utf8_lossy(&output.stderr).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stdout));
    let result = if output.status.success() {
        Ok(())
    } else {
        Err(classify_failure(&text))
    };
    if !output.status.success()
        && let Some(last) = final_error(&text)
    {
        // The final error last, on one line, where a table shows it.
        let last = last.replace('\n', " ");
        text.push('\n');
        text.push_str(&last);
    }
    let keep = text.len().saturating_sub(4096);
    let start = (keep..text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    Ok(PullOutcome {
        result,
        output: text[start..].trim().to_owned(),
        elapsed: started.elapsed(),
    })
}

/// A `containerd` daemon of its own, for `ctr` pulls; killed on drop.
pub struct Containerd {
    process: Process,
    socket: PathBuf,
    version: String,
    // Last: removed after the process is gone.
    dir: TempDir,
}

impl std::fmt::Debug for Containerd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Containerd")
            .field("pid", &self.process.id())
            .field("socket", &self.socket)
            .field("version", &self.version)
            .finish()
    }
}

/// What [`Containerd::pull`] passes to `ctr images pull`.
#[derive(Debug, Clone, Default)]
pub struct CtrPull<'a> {
    /// `--hosts-dir`: the `hosts.toml` directory (`certs.d` layout).
    pub hosts_dir: Option<&'a Path>,
    /// `--user USER:PASSWORD`: credentials for every host asked, as the CRI plugin
    /// gives a pull's credentials without a server address.
    pub user: Option<(&'a str, &'a str)>,
    /// `--platform`.
    pub platform: Option<&'a str>,
    /// `--plain-http`.
    pub plain_http: bool,
}

impl Containerd {
    /// containerd's version line (`containerd github.com/containerd/containerd 1.6.20…`),
    /// or `None` when it or `ctr` is not installed.
    pub fn installed() -> Option<String> {
        if !Path::new(CTR_BINARY).exists() {
            return None;
        }
        version_of(CONTAINERD_BINARY)
    }

    /// Starts containerd with its root, state and socket in a new temporary directory
    /// and the CRI plugin off, and waits (at most 20 s) until `ctr version` answers.
    ///
    /// # Errors
    /// Not installed, the config cannot be written, or containerd exits or does not
    /// answer in time (with its stderr).
    pub async fn start() -> Result<Containerd, Error> {
        Self::start_with(None).await
    }

    /// Starts containerd with the CRI plugin on (version 2 config; the native
    /// snapshotter; CNI directories of its own under the temporary directory, empty:
    /// the plugin starts without a network configuration and `PullImage` needs none;
    /// the streaming server on `127.0.0.1`, port chosen by the kernel) and `registry`
    /// appended to the config: TOML tables under
    /// `[plugins."io.containerd.grpc.v1.cri".registry]` (`config_path`, `mirrors`,
    /// `configs`), or `""`. Waits (at most 20 s) until `ctr plugins ls` lists the CRI
    /// plugin `ok`.
    ///
    /// # Errors
    /// As [`Containerd::start`]; and when the CRI plugin did not load (containerd
    /// refusing the registry section, e.g. `config_path` with `mirrors`), with
    /// containerd's log.
    pub async fn start_cri(registry: &str) -> Result<Containerd, Error> {
        Self::start_with(Some(registry)).await
    }

    async fn start_with(cri: Option<&str>) -> Result<Containerd, Error> {
        let version = Self::installed().ok_or_else(|| {
            Error::Unsupported(format!(
                "{CONTAINERD_BINARY} or {CTR_BINARY} is not installed"
            ))
        })?;
        let dir = TempDir::new("containerd")?;
        let socket = dir.path().join("containerd.sock");
        let config = dir.path().join("config.toml");
        let mut toml = format!(
            "version = 2\n\
             root = {root}\n\
             state = {state}\n\
             [grpc]\n  address = {sock}\n\
             [ttrpc]\n  address = {ttrpc}\n\
             [debug]\n  address = \"\"\n\
             [metrics]\n  address = \"\"\n",
            root = toml_str(&dir.path().join("root")),
            state = toml_str(&dir.path().join("state")),
            sock = toml_str(&socket),
            ttrpc = toml_str(&dir.path().join("containerd.sock.ttrpc")),
        );
        match cri {
            None => toml.insert_str(
                toml.find("[grpc]").unwrap_or(0),
                "disabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n",
            ),
            Some(registry) => {
                for sub in ["cni-bin", "cni-conf"] {
                    std::fs::create_dir(dir.path().join(sub))
                        .map_err(|e| Error::io(format!("creating {sub}"), e))?;
                }
                toml.push_str(&format!(
                    "[plugins.\"io.containerd.grpc.v1.cri\"]\n\
                     \x20 stream_server_address = \"127.0.0.1\"\n\
                     \x20 stream_server_port = \"0\"\n\
                     [plugins.\"io.containerd.grpc.v1.cri\".containerd]\n\
                     \x20 snapshotter = \"native\"\n\
                     [plugins.\"io.containerd.grpc.v1.cri\".cni]\n\
                     \x20 bin_dir = {bin}\n\
                     \x20 conf_dir = {conf}\n\
                     {registry}\n",
                    bin = toml_str(&dir.path().join("cni-bin")),
                    conf = toml_str(&dir.path().join("cni-conf")),
                ));
            }
        }
        std::fs::write(&config, toml)
            .map_err(|e| Error::io(format!("writing {}", config.display()), e))?;
        let mut process = Process::spawn(
            PathBuf::from(CONTAINERD_BINARY),
            vec!["--config".into(), config.to_string_lossy().into_owned()],
            dir.path().to_path_buf(),
            |_| {},
        )?;
        let deadline = Instant::now() + Duration::from_secs(20);
        let sock = socket.to_string_lossy().into_owned();
        loop {
            if let Some(status) = process.exited() {
                return Err(Error::Tool {
                    command: format!("{CONTAINERD_BINARY} --config {}", config.display()),
                    status,
                    stderr: process.stderr(),
                });
            }
            if socket.exists() {
                match ctr_plugin_state(&sock, cri.is_some()).await {
                    PluginState::Ready => break,
                    PluginState::Failed => {
                        return Err(Error::Unsupported(format!(
                            "containerd's CRI plugin did not load; containerd's log:\n{}",
                            process.stderr()
                        )));
                    }
                    PluginState::NotYet => {}
                }
            }
            if Instant::now() > deadline {
                return Err(Error::Unsupported(format!(
                    "containerd did not answer on {} within 20s; stderr:\n{}",
                    socket.display(),
                    process.stderr()
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(Containerd {
            process,
            socket,
            version,
            dir,
        })
    }

    /// The version line.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The `config.toml` this daemon was started with (for pullcheck's
    /// `--containerd-config` on the same file).
    pub fn config_file(&self) -> PathBuf {
        self.dir.path().join("config.toml")
    }

    /// Pulls `reference` with `ctr images pull` (fetch and unpack with the native
    /// snapshotter), bounded by [`PULL_TIMEOUT`].
    ///
    /// # Errors
    /// Only when `ctr` cannot be run; a failed pull is a [`PullOutcome`].
    pub async fn pull(&self, reference: &str, opts: &CtrPull<'_>) -> Result<PullOutcome, Error> {
        let mut args: Vec<String> = vec![
            "--address".into(),
            self.socket.to_string_lossy().into_owned(),
            "images".into(),
            "pull".into(),
            "--snapshotter".into(),
            "native".into(),
        ];
        if let Some(dir) = opts.hosts_dir {
            args.push("--hosts-dir".into());
            args.push(dir.to_string_lossy().into_owned());
        }
        if let Some((user, password)) = opts.user {
            args.push("--user".into());
            args.push(format!("{user}:{password}"));
        }
        if let Some(p) = opts.platform {
            args.push("--platform".into());
            args.push(p.to_owned());
        }
        if opts.plain_http {
            args.push("--plain-http".into());
        }
        args.push(reference.to_owned());
        let mut outcome = run_pull(CTR_BINARY, &args, &[], self.dir.path()).await?;
        if let Some((_, password)) = opts.user {
            outcome.output = outcome.output.replace(password, "<redacted>");
        }
        Ok(outcome)
    }

    /// Pulls `reference` through the CRI plugin (`ImageService.PullImage`, as the
    /// kubelet: [`crate::cri::pull_request`]) with `auth` or none, bounded by
    /// [`PULL_TIMEOUT`]. The daemon must have been started with
    /// [`Containerd::start_cri`]. The platform is the node's (containerd's default).
    ///
    /// # Errors
    /// Only when the socket cannot be connected; a failed pull is a [`PullOutcome`]
    /// whose output is the gRPC status message, the secret redacted.
    pub async fn cri_pull(
        &self,
        reference: &str,
        auth: Option<&crate::cri::CriAuth>,
    ) -> Result<PullOutcome, Error> {
        let started = Instant::now();
        let request = crate::cri::pull_request(reference, auth);
        let answer = tokio::time::timeout(
            PULL_TIMEOUT,
            crate::cri::pull_image(self.socket.clone(), request),
        )
        .await;
        let (result, mut output) = match answer {
            Err(_) => (
                Err(FailureKind::Other),
                format!(
                    "PullImage {reference}: no answer after {}s",
                    PULL_TIMEOUT.as_secs()
                ),
            ),
            Ok(answer) => match answer? {
                Ok(response) => (Ok(()), response.image_ref),
                Err(status) => {
                    let message = status.message().replace('\n', " ");
                    (Err(classify_failure(&message)), message)
                }
            },
        };
        if let Some(auth) = auth {
            output = output.replace(auth.secret(), "<redacted>");
        }
        Ok(PullOutcome {
            result,
            output,
            elapsed: started.elapsed(),
        })
    }
}

enum PluginState {
    Ready,
    NotYet,
    Failed,
}

/// Whether containerd answers on `sock` (`ctr version`) and, with `cri`, whether
/// `ctr plugins ls` lists `io.containerd.grpc.v1 cri` as `ok` (`error`: it failed to
/// load; containerd itself runs on without it).
async fn ctr_plugin_state(sock: &str, cri: bool) -> PluginState {
    let args: &[&str] = if cri {
        &["--address", sock, "plugins", "ls"]
    } else {
        &["--address", sock, "version"]
    };
    let Ok(out) = tokio::process::Command::new(CTR_BINARY)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
    else {
        return PluginState::NotYet;
    };
    if !out.status.success() {
        return PluginState::NotYet;
    }
    if !cri {
        return PluginState::Ready;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| {
        let mut w = l.split_whitespace();
        w.next() == Some("io.containerd.grpc.v1") && w.next() == Some("cri")
    });
    match line.and_then(|l| l.split_whitespace().last()) {
        Some("ok") => PluginState::Ready,
        Some("error") => PluginState::Failed,
        _ => PluginState::NotYet,
    }
}

/// A podman storage root of its own (vfs), for `podman pull`.
#[derive(Debug)]
pub struct Podman {
    version: String,
    /// podman refuses a run root longer than 50 bytes, so it is a short directory of
    /// its own under `/tmp`, removed on drop.
    runroot: ShortDir,
    dir: TempDir,
}

/// `/tmp/pcp.PID.N`: removed recursively on drop.
#[derive(Debug)]
struct ShortDir(PathBuf);

impl ShortDir {
    fn new() -> Result<ShortDir, Error> {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = PathBuf::from(format!("/tmp/pcp.{}.{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir(&path)
            .map_err(|e| Error::io(format!("creating {}", path.display()), e))?;
        Ok(ShortDir(path))
    }
}

impl Drop for ShortDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What [`Podman::pull`] passes to `podman pull`.
#[derive(Debug, Clone, Default)]
pub struct PodmanPull<'a> {
    /// `CONTAINERS_REGISTRIES_CONF`: the registries.conf to use (else an empty one).
    pub registries_conf: Option<&'a Path>,
    /// `--authfile`.
    pub auth_file: Option<&'a Path>,
    /// `--cert-dir`: a directory of `*.crt` CA files trusted for every registry.
    pub cert_dir: Option<&'a Path>,
    /// `--tls-verify=false` when `Some(false)`.
    pub tls_verify: Option<bool>,
    /// `--platform`.
    pub platform: Option<&'a str>,
    /// A per-host certificates tree laid out as containers/image's
    /// `/etc/containers/certs.d` (`<host:port>/ca.crt`): podman's own
    /// `$HOME/.config/containers/certs.d` points at it for this pull (the first per-host
    /// directory `dockerCertDir` looks in, docker/docker_client.go v5.23.1 lines 66 and
    /// 191–202; `--cert-dir` is read flat, for every host, instead).
    pub certs_d: Option<&'a Path>,
    /// `--creds USER:PASSWORD`: containers/image's `SystemContext.DockerAuthConfig`, the
    /// field CRI-O fills from the CRI request's pull secret.
    pub creds: Option<(&'a str, &'a str)>,
    /// `PATH` for podman (and the credential helpers it runs); else the test's own.
    pub path: Option<&'a str>,
}

impl Podman {
    /// podman's version line (`podman version 4.3.1`), or `None` when not installed.
    pub fn installed() -> Option<String> {
        version_of(PODMAN_BINARY)
    }

    /// A new storage root, run root, home and signature policy (accept anything).
    ///
    /// # Errors
    /// Not installed, or the directory cannot be made.
    pub fn new() -> Result<Podman, Error> {
        let version = Self::installed()
            .ok_or_else(|| Error::Unsupported(format!("{PODMAN_BINARY} is not installed")))?;
        let dir = TempDir::new("podman")?;
        let runroot = ShortDir::new()?;
        for sub in ["root", "home", "xdg", "tmp"] {
            std::fs::create_dir(dir.path().join(sub))
                .map_err(|e| Error::io(format!("creating {sub}"), e))?;
        }
        write(
            &dir.path().join("policy.json"),
            r#"{"default":[{"type":"insecureAcceptAnything"}]}"#,
        )?;
        write(&dir.path().join("registries.conf"), "")?;
        write(&dir.path().join("containers.conf"), "")?;
        Ok(Podman {
            version,
            runroot,
            dir,
        })
    }

    /// The version line.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Pulls `reference`, bounded by [`PULL_TIMEOUT`].
    ///
    /// # Errors
    /// Only when podman cannot be run; a failed pull is a [`PullOutcome`].
    pub async fn pull(&self, reference: &str, opts: &PodmanPull<'_>) -> Result<PullOutcome, Error> {
        let d = self.dir.path();
        let path = |p: &Path| p.to_string_lossy().into_owned();
        let mut args: Vec<String> = vec![
            "--root".into(),
            path(&d.join("root")),
            "--runroot".into(),
            path(&self.runroot.0),
            "--storage-driver".into(),
            "vfs".into(),
            "--cgroup-manager".into(),
            "cgroupfs".into(),
            "--events-backend".into(),
            "none".into(),
            "pull".into(),
            "--quiet".into(),
            "--signature-policy".into(),
            path(&d.join("policy.json")),
        ];
        let empty_auth = d.join("auth.json");
        if !empty_auth.exists() {
            write(&empty_auth, "{}")?;
        }
        args.push("--authfile".into());
        args.push(path(opts.auth_file.unwrap_or(&empty_auth)));
        if let Some(dir) = opts.cert_dir {
            args.push("--cert-dir".into());
            args.push(path(dir));
        }
        if opts.tls_verify == Some(false) {
            args.push("--tls-verify=false".into());
        }
        if let Some(p) = opts.platform {
            args.push("--platform".into());
            args.push(p.to_owned());
        }
        if let Some((user, password)) = opts.creds {
            args.push("--creds".into());
            args.push(format!("{user}:{password}"));
        }
        args.push(reference.to_owned());
        let containers = d.join("home").join(".config").join("containers");
        std::fs::create_dir_all(&containers)
            .map_err(|e| Error::io(format!("creating {}", containers.display()), e))?;
        let certs_d = containers.join("certs.d");
        if std::fs::symlink_metadata(&certs_d).is_ok() {
            std::fs::remove_file(&certs_d)
                .map_err(|e| Error::io(format!("removing {}", certs_d.display()), e))?;
        }
        if let Some(tree) = opts.certs_d {
            std::os::unix::fs::symlink(tree, &certs_d)
                .map_err(|e| Error::io(format!("linking {}", certs_d.display()), e))?;
        }
        let conf = opts
            .registries_conf
            .map_or_else(|| d.join("registries.conf"), Path::to_path_buf);
        let (containers_conf, home, xdg, tmp) = (
            d.join("containers.conf"),
            d.join("home"),
            d.join("xdg"),
            d.join("tmp"),
        );
        let mut envs: Vec<(&str, &Path)> = vec![
            ("CONTAINERS_REGISTRIES_CONF", &conf),
            ("CONTAINERS_CONF", &containers_conf),
            ("HOME", &home),
            ("XDG_RUNTIME_DIR", &xdg),
            ("TMPDIR", &tmp),
            ("XDG_CONFIG_HOME", &home),
        ];
        if let Some(path) = opts.path {
            envs.push(("PATH", Path::new(path)));
        }
        let outcome = run_pull(PODMAN_BINARY, &args, &envs, d).await;
        if opts.certs_d.is_some() {
            let _ = std::fs::remove_file(&certs_d);
        }
        outcome
    }
}

/// Makes a CA and a server certificate for `127.0.0.1` (and `localhost`) under `dir`
/// with the `openssl` CLI: `ca.crt`, `server.crt`, `server.key`.
///
/// # Errors
/// `openssl` fails or a file cannot be written.
pub fn make_tls_files(dir: &Path) -> Result<TlsFiles, Error> {
    let ext = dir.join("san.ext");
    write(
        &ext,
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n",
    )?;
    openssl_self_signed(dir, "/CN=pullcheck-testkit-ca", "ca.key", "ca.crt")?;
    let steps: [&[&str]; 2] = [
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-sha256",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
        ],
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-sha256",
            "-extfile",
            "san.ext",
            "-out",
            "server.crt",
        ],
    ];
    for args in steps {
        run_tool("openssl", args, dir, &format!("openssl {}", args.join(" ")))?;
    }
    Ok(TlsFiles {
        cert: dir.join("server.crt"),
        key: dir.join("server.key"),
        ca: dir.join("ca.crt"),
    })
}

fn write(path: &Path, text: &str) -> Result<(), Error> {
    std::fs::write(path, text).map_err(|e| Error::io(format!("writing {}", path.display()), e))
}

/// A TOML basic string.
fn toml_str(p: &Path) -> String {
    serde_json::Value::String(p.to_string_lossy().into_owned()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_sorted_by_the_runtimes_messages() {
        let cases = [
            (
                "ctr: failed to resolve reference \"127.0.0.1:1/a:b\": 127.0.0.1:1/a:b: not found",
                FailureKind::NotFound,
            ),
            (
                "Error: initializing source docker://127.0.0.1:1/a:b: reading manifest b in 127.0.0.1:1/a: manifest unknown: manifest unknown",
                FailureKind::NotFound,
            ),
            (
                "ctr: failed to resolve reference: pulling from host 127.0.0.1:1 failed with status code [manifests b]: 401 Unauthorized",
                FailureKind::Unauthorized,
            ),
            (
                "Error: initializing source docker://x: pinging container registry 127.0.0.1:1: Get \"https://127.0.0.1:1/v2/\": http: server gave HTTP response to HTTPS client",
                FailureKind::Tls,
            ),
            (
                "dial tcp 127.0.0.1:1: connect: connection refused",
                FailureKind::Unreachable,
            ),
            (
                "Error: registry 127.0.0.1:1 is blocked in registries.conf",
                FailureKind::Blocked,
            ),
            (
                "Error: initializing source docker://127.0.0.1:1/a:b: getting username and password: 1 error occurred: * error getting credentials - err: exec: \"docker-credential-x\": executable file not found in $PATH, out: ``",
                FailureKind::Credentials,
            ),
            (
                "failed to resolve reference \"127.0.0.1:1/app:v1\": pulling from host 127.0.0.1:1 failed with status code [manifests v1]: 400 Bad Request",
                FailureKind::ServerError,
            ),
            ("something else", FailureKind::Other),
        ];
        for (text, kind) in cases {
            assert_eq!(classify_failure(text), kind, "{text}");
        }
    }
}
