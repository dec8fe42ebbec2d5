//! The `pullcheck` command: a thin layer over the `pullcheck` library.

mod sources;

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use pullcheck::credentials::{HelperOptions, NodeCredentials, NodeEnv, NodeOptions};
use pullcheck::mirrors::{MirrorConfig, NodeProfile};
use pullcheck::registry::{ClientOptions, Platform};
use pullcheck::report::EXIT_USAGE;
use pullcheck::resolve::{Credentials, Resolver};
use pullcheck::{CheckOptions, Checker, CheckerOptions};

use sources::ClusterArgs;

/// Checks, before a build starts, that every image it will pull exists in its registry,
/// as the node's kubelet and container runtime will see it.
///
/// Logs go to stderr: -v, -vv, or PULLCHECK_LOG=<tracing filter>. Credentials and tokens
/// are never logged.
#[derive(Debug, Parser)]
#[command(name = "pullcheck", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// More log output on stderr: -v debug, -vv trace (pullcheck's own), -vvv trace of
    /// everything, the HTTP and TLS libraries too. Secrets are never logged.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check every image of pipelines (Vela .vela.yml, a compiled build JSON) and
    /// Kubernetes manifests (Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job,
    /// CronJob), and --image arguments, against their registries.
    ///
    /// Exit codes: 0 every checked image is present; 1 an image failed (missing,
    /// no_access, denied, blocked, invalid); 3 nothing failed but some image could not
    /// be verified (unreachable); 2 usage or configuration error.
    Check(Box<CheckArgs>),
    /// Show how references are understood: the normalised parts, and the endpoints and
    /// credentials a check would use, with the rule behind each. Sends no request to a
    /// registry and runs no credential helper (with --namespace it reads the pull secrets
    /// from the Kubernetes API).
    ///
    /// Exit codes: 0 every reference parsed; 1 a reference is invalid; 2 usage or
    /// configuration error.
    Explain(Box<ExplainArgs>),
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
enum Format {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
enum Color {
    Auto,
    Always,
    Never,
}

/// Where credentials, mirrors and the cluster are found; shared by check and explain.
#[derive(Debug, Args)]
struct Sources {
    /// A pull secret: a Secret manifest (YAML or JSON, kubernetes.io/dockerconfigjson or
    /// kubernetes.io/dockercfg; a List or several documents are fine). Repeatable. Its
    /// keys go in one keyring, as the kubelet builds it.
    #[arg(long, value_name = "FILE", help_heading = "Credentials")]
    pull_secret: Vec<PathBuf>,
    /// Docker config: a config.json file, or a directory holding one. Default:
    /// $DOCKER_CONFIG/config.json, else ~/.docker/config.json.
    #[arg(long, value_name = "PATH", help_heading = "Credentials")]
    docker_config: Option<PathBuf>,
    /// containers auth.json. Default: $REGISTRY_AUTH_FILE, else
    /// $XDG_RUNTIME_DIR/containers/auth.json.
    #[arg(long, value_name = "PATH", help_heading = "Credentials")]
    auth_file: Option<PathBuf>,
    /// How long a docker-credential-<name> helper may take.
    #[arg(long, default_value = "10s", value_parser = parse_duration, help_heading = "Credentials")]
    helper_timeout: Duration,

    /// containers-registries.conf (CRI-O, podman), with its registries.conf.d drop-ins.
    #[arg(
        long,
        value_name = "PATH",
        help_heading = "Mirrors",
        group = "mirror_source"
    )]
    registries_conf: Option<PathBuf>,
    /// containerd's hosts directory (the certs.d layout of hosts.toml files).
    #[arg(
        long,
        value_name = "DIR",
        help_heading = "Mirrors",
        group = "mirror_source"
    )]
    hosts_dir: Option<PathBuf>,
    /// Docker daemon.json: its registry-mirrors (Docker Hub only) and insecure-registries.
    #[arg(
        long,
        value_name = "PATH",
        help_heading = "Mirrors",
        group = "mirror_source"
    )]
    docker_daemon_config: Option<PathBuf>,
    /// Read the standard paths of a node running this runtime: crio
    /// (/etc/containers/registries.conf), containerd (/etc/containerd/certs.d), docker
    /// (/etc/docker/daemon.json).
    #[arg(
        long,
        value_name = "RUNTIME",
        help_heading = "Mirrors",
        group = "mirror_source"
    )]
    node_config: Option<String>,
    /// Allow plain HTTP and unverified TLS for this registry (host or host:port).
    /// localhost and 127.0.0.0/8 may use plain HTTP without it. Repeatable.
    #[arg(long, value_name = "HOST[:PORT]", help_heading = "Mirrors")]
    insecure_registry: Vec<String>,

    /// The build namespace: read the pull secrets from the cluster, as the build Pod
    /// will get them (the pods template's imagePullSecrets, else its ServiceAccount's).
    #[arg(long, short = 'n', value_name = "NS", help_heading = "Kubernetes")]
    namespace: Option<String>,
    /// kubeconfig file. Default: $KUBECONFIG, else ~/.kube/config, else in-cluster.
    #[arg(long, value_name = "PATH", help_heading = "Kubernetes")]
    kubeconfig: Option<PathBuf>,
    /// kubeconfig context, as in kubectl.
    #[arg(long, value_name = "NAME", help_heading = "Kubernetes")]
    context: Option<String>,
    /// A PipelinePodsTemplate (go-vela.github.io/v1alpha1) in the build namespace.
    #[arg(
        long,
        value_name = "NAME",
        help_heading = "Kubernetes",
        conflicts_with = "pods_template_file"
    )]
    pods_template: Option<String>,
    /// A PipelinePodsTemplate file (read strictly: unknown fields are errors).
    #[arg(long, value_name = "PATH", help_heading = "Kubernetes")]
    pods_template_file: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct CheckArgs {
    /// Pipeline files (Vela source YAML, a compiled build JSON) or Kubernetes manifests;
    /// the kind is detected from the content. `-` reads standard input (once). Files
    /// over 64 MiB are refused.
    #[arg(value_name = "FILE")]
    files: Vec<PathBuf>,
    /// An image to check, with an optional pull policy (always, not_present, on_start,
    /// never, or Kubernetes' Always, IfNotPresent, Never). Default policy: always.
    /// Repeatable.
    #[arg(long = "image", value_name = "REF[=POLICY]")]
    images: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Colour in text output: auto means on a terminal and NO_COLOR unset.
    #[arg(long, value_enum, default_value_t = Color::Auto)]
    color: Color,
    /// Also check on_start images now, instead of reporting them deferred.
    #[arg(long)]
    include_on_start: bool,
    /// Requests in flight at once, over all registries.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..))]
    concurrency: u16,
    /// Timeout of each HTTP request (e.g. 10s, 500ms).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    request_timeout: Duration,
    /// Overall deadline; images without an answer by then are unreachable (e.g. 60s).
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    deadline: Duration,
    /// Tries per request when the registry answers 408, 429, 502, 503, 504 or the
    /// connection is refused or reset.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=10))]
    max_attempts: u32,
    /// Do not ask tags/list after a 404 (which tells a missing repository from a missing
    /// tag and suggests close tags).
    #[arg(long)]
    no_tag_hints: bool,
    /// Also require this platform (os/arch[/variant], e.g. linux/arm64) in indexes and
    /// manifest lists. Off by default: it needs a GET of each index, which counts
    /// against Docker Hub's pull rate limit (a HEAD does not).
    #[arg(long, value_name = "OS/ARCH[/VARIANT]", value_parser = Platform::parse)]
    platform: Option<Platform>,
    /// Extra root certificates (PEM) trusted for every registry.
    #[arg(long, value_name = "PATH")]
    ca_file: Option<PathBuf>,
    /// Docker-style certificates directory: <dir>/<host[:port]>/ca.crt, and
    /// client.cert + client.key for mutual TLS.
    #[arg(long, value_name = "DIR")]
    certs_dir: Option<PathBuf>,
    #[command(flatten)]
    sources: Sources,
}

#[derive(Debug, Args)]
struct ExplainArgs {
    /// References to explain.
    #[arg(value_name = "REF", required = true)]
    references: Vec<String>,
    /// Output format; json prints one object per reference, one per line.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Deadline of the Kubernetes lookups of the pull secrets (e.g. 60s); explain sends
    /// no registry request.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    deadline: Duration,
    #[command(flatten)]
    sources: Sources,
}

/// Parses a positive duration: `10s`, `500ms`, `2m`, or a bare number of seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let d = parse_any_duration(text)?;
    if d.is_zero() {
        return Err(format!("{text:?}: must be more than zero"));
    }
    Ok(d)
}

fn parse_any_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = text
        .find(|c: char| !c.is_ascii_digit())
        .map_or((text, ""), |i| text.split_at(i));
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration such as 10s or 500ms"))?;
    match unit {
        "ms" => Ok(Duration::from_millis(n)),
        "" | "s" => Ok(Duration::from_secs(n)),
        "m" => Ok(Duration::from_secs(n.saturating_mul(60))),
        _ => Err(format!("{text:?}: unknown unit {unit:?}; use ms, s or m")),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.verbose);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            return ExitCode::from(fail(&format!("cannot start the async runtime: {e}")) as u8);
        }
    };
    let code = match cli.command {
        Command::Check(args) => runtime.block_on(run_check(*args)),
        Command::Explain(args) => runtime.block_on(run_explain(*args)),
    };
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

fn init_logging(verbose: u8) {
    let default = match verbose {
        // kube-rs logs a failed request at ERROR; pullcheck reports it itself.
        0 => "warn,kube_client=off",
        1 => "pullcheck=debug,pullcheck_registry=debug,pullcheck_cli=debug",
        // Without the handshake and frame dumps of rustls, hyper and h2.
        2 => {
            "info,pullcheck=trace,pullcheck_registry=trace,pullcheck_cli=trace,\
             pullcheck_kube=trace,pullcheck_credentials=trace,pullcheck_mirrors=trace,\
             pullcheck_input=trace"
        }
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("PULLCHECK_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal() && !no_color())
        .try_init();
}

/// Writes `text` to stdout. A closed pipe (`| head`) ends the output quietly and keeps
/// `code`; any other write error (a full disk) is a usage-level error, exit 2.
fn emit(text: &str, code: i32) -> i32 {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => code,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => code,
        Err(e) => fail(&format!("cannot write the output: {e}")),
    }
}

fn fail(error: &dyn std::fmt::Display) -> i32 {
    eprintln!("pullcheck: error: {error}");
    EXIT_USAGE
}

impl Sources {
    fn resolver(&self) -> Result<Resolver, String> {
        let mirrors = if let Some(path) = &self.registries_conf {
            MirrorConfig::load_registries_conf(path)
        } else if let Some(dir) = &self.hosts_dir {
            MirrorConfig::load_hosts_dir(dir)
        } else if let Some(path) = &self.docker_daemon_config {
            MirrorConfig::load_docker_daemon(path)
        } else if let Some(profile) = &self.node_config {
            profile
                .parse::<NodeProfile>()
                .and_then(|p| MirrorConfig::from_node_profile(p, None))
        } else {
            Ok(MirrorConfig::none())
        }
        .map_err(|e| e.to_string())?;
        Ok(Resolver {
            mirrors,
            insecure_registries: self.insecure_registry.clone(),
        })
    }

    fn node(&self) -> Result<NodeCredentials, String> {
        NodeCredentials::load(&NodeOptions {
            docker_config: self.docker_config.clone(),
            auth_file: self.auth_file.clone(),
            env: NodeEnv::from_process(),
            helpers: HelperOptions {
                timeout: self.helper_timeout,
                ..HelperOptions::default()
            },
        })
        .map_err(|e| e.to_string())
    }

    fn cluster(&self) -> ClusterArgs {
        ClusterArgs {
            namespace: self.namespace.clone(),
            kubeconfig: self.kubeconfig.clone(),
            context: self.context.clone(),
            pods_template: self.pods_template.clone(),
            pods_template_file: self.pods_template_file.clone(),
        }
    }
}

async fn run_check(args: CheckArgs) -> i32 {
    if args.files.is_empty() && args.images.is_empty() {
        return fail(&"nothing to check: give pipeline files and/or --image REF[=POLICY]");
    }
    let mut images = Vec::new();
    for image in &args.images {
        match pullcheck::input::parse_image_arg(image) {
            Ok(u) => images.push(u),
            Err(e) => return fail(&e),
        }
    }
    let (resolver, node) = match (args.sources.resolver(), args.sources.node()) {
        (Ok(r), Ok(n)) => (r, n),
        (Err(e), _) | (_, Err(e)) => return fail(&e),
    };
    let gathered = match gather_within_deadline(&args, images).await {
        Ok(g) => g,
        Err(e) => return fail(&e),
    };
    for chain in &gathered.walked {
        tracing::debug!("pull secrets: {chain}");
    }
    let checker_options = CheckerOptions {
        concurrency: usize::from(args.concurrency),
        registry: ClientOptions {
            request_timeout: args.request_timeout,
            tag_hints: !args.no_tag_hints,
            max_attempts: args.max_attempts,
            platform: args.platform.clone(),
            ca_file: args.ca_file.clone(),
            certs_dir: args.certs_dir.clone(),
            ..ClientOptions::default()
        },
    };
    let checker = match Checker::new(checker_options, resolver, node) {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    let options = CheckOptions {
        include_on_start: args.include_on_start,
        deadline: args.deadline,
        deadline_start: Some(gathered.deadline_start),
        platform: args.platform.clone(),
    };
    let report = checker.check_sets(gathered.sets, &options).await;
    let text = match args.format {
        Format::Json => format!("{}\n", report.to_json()),
        Format::Text => {
            let color = match args.color {
                Color::Always => true,
                Color::Never => false,
                Color::Auto => std::io::stdout().is_terminal() && !no_color(),
            };
            report.to_text(color)
        }
    };
    emit(&text, report.exit_code())
}

/// [`sources::gather`] on a runtime worker, watched from here, so that `--deadline`
/// bounds the Kubernetes lookups even when a kubeconfig exec plugin (run by kube-rs
/// with a blocking `std::process` call) holds that worker, where no timer inside the
/// task could fire. At the deadline the run ends with an error, and the process exits
/// without waiting for a stuck thread.
async fn gather_within_deadline(
    args: &CheckArgs,
    images: Vec<pullcheck::input::ImageUse>,
) -> Result<sources::Gathered, String> {
    let (started_tx, started_rx) = tokio::sync::oneshot::channel();
    let (files, pull_secrets, cluster, deadline) = (
        args.files.clone(),
        args.sources.pull_secret.clone(),
        args.sources.cluster(),
        args.deadline,
    );
    let task = tokio::spawn(async move {
        sources::gather(&files, images, &pull_secrets, &cluster, started_tx).await
    });
    match started_rx.await {
        // Reading the inputs takes what it takes (a slow stdin); the lookups do not.
        Ok(started) => await_lookups(task, started, deadline).await,
        // Ended (an unreadable input) before the lookups started.
        Err(_) => task
            .await
            .map_err(|e| format!("reading the inputs failed: {e}"))?,
    }
}

/// Awaits `task`, Kubernetes lookups on a runtime worker, until `deadline` after
/// `started`. Past it, prints the error and exits 2 at once: the worker may be held by
/// a blocking exec plugin, which nothing can interrupt or wait for.
async fn await_lookups<T>(
    task: tokio::task::JoinHandle<Result<T, String>>,
    started: std::time::Instant,
    deadline: Duration,
) -> Result<T, String> {
    let watch = tokio::time::Instant::from_std(pullcheck::deadline_at(started, deadline));
    match tokio::time::timeout_at(watch, task).await {
        Ok(joined) => joined.map_err(|e| format!("the Kubernetes lookups failed: {e}"))?,
        Err(_) => {
            fail(&format!(
                "the Kubernetes lookups of the pull secrets (kubeconfig, exec plugin, API \
                 server) did not finish within the --deadline of {}",
                sources::format_duration(deadline)
            ));
            std::process::exit(2);
        }
    }
}

/// `NO_COLOR` set to a non-empty value (no-color.org), or a dumb terminal.
fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
        || std::env::var_os("TERM").is_some_and(|t| t == "dumb")
}

async fn run_explain(args: ExplainArgs) -> i32 {
    let (resolver, node) = match (args.sources.resolver(), args.sources.node()) {
        (Ok(r), Ok(n)) => (r, n),
        (Err(e), _) | (_, Err(e)) => return fail(&e),
    };
    let cluster = args.sources.cluster();
    let task = tokio::spawn(async move { sources::build_chain(&cluster).await });
    let chain = match await_lookups(task, std::time::Instant::now(), args.deadline).await {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    let keyring = match sources::build_keyring(&args.sources.pull_secret, chain.as_ref()) {
        Ok(k) => k,
        Err(e) => return fail(&e),
    };
    let credentials = Credentials::new(keyring, node);
    let mut out = String::new();
    if let (Some(chain), Format::Text) = (&chain, args.format) {
        out.push_str(&format!("pull secrets: {chain}\n"));
    }
    let mut any_invalid = false;
    for input in &args.references {
        let explanation = pullcheck::explain::explain(input, &resolver, &credentials);
        any_invalid |= !explanation.ok;
        match args.format {
            Format::Json => {
                let mut value = match serde_json::to_value(&explanation) {
                    Ok(v) => v,
                    Err(e) => return fail(&e),
                };
                if let (Some(chain), Some(object)) = (&chain, value.as_object_mut()) {
                    object.insert(
                        "pull_secrets".into(),
                        serde_json::to_value(chain).unwrap_or_default(),
                    );
                }
                out.push_str(&format!("{value}\n"));
            }
            Format::Text => out.push_str(&explanation.to_text()),
        }
    }
    emit(&out, if any_invalid { 1 } else { 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("7"), Ok(Duration::from_secs(7)));
        assert!(parse_duration("ten").is_err());
        assert!(parse_duration("5h").is_err());
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("0ms").is_err());
    }

    #[test]
    fn cli_is_well_formed() {
        use clap::CommandFactory as _;
        Cli::command().debug_assert();
    }
}
