//! The `pullcheck` command: a thin layer over the `pullcheck` library.

// The doc comments below are clap's help text, shown as written (`<name>`, `[:port]`), not
// rustdoc markdown.
#![allow(rustdoc::invalid_html_tags, rustdoc::broken_intra_doc_links)]

mod plugin;
mod render;

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use pullcheck::credentials::{
    CredentialProviders, HelperOptions, NodeCredentials, NodeEnv, NodeOptions, ProviderOptions,
};
use pullcheck::mirrors::{MirrorConfig, NodeProfile};
use pullcheck::registry::{ClientOptions, EgressPolicy, EgressRule, Platform};
use pullcheck::report::EXIT_USAGE;
use pullcheck::resolve::{Credentials, Resolver};
use pullcheck::{Checker, CheckerOptions};

use pullcheck::credentials::PullSecret;
use pullcheck_kube::{Cluster, ClusterOptions, TemplateSource};
use pullcheck_sources::{NamedText, RequestError, SourceError};
use render::Naming;

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
    /// no_access, denied, blocked, invalid, unrunnable); 3 nothing failed but some image could not
    /// be verified (unreachable); 2 usage or configuration error, or no image in any
    /// input (unless --allow-empty).
    Check(Box<CheckArgs>),
    /// Show how references are understood: the normalised parts, and the endpoints and
    /// credentials a check would use, with the rule behind each. Sends no request to a
    /// registry and runs no credential helper (with --namespace it reads the pull secrets
    /// from the Kubernetes API).
    ///
    /// Exit codes: 0 every reference parsed; 1 a reference is invalid; 2 usage or
    /// configuration error.
    Explain(Box<ExplainArgs>),
    /// Serve checks over HTTP for CI workers, from warm connections and cached tokens:
    /// POST /v1/checks (a JSON request; answers the report of `check --format json` plus
    /// "exit_code"), GET /healthz, /readyz, /metrics. See docs/service.md.
    ///
    /// Stops on SIGTERM or SIGINT: no new connections, checks in flight finish (up to
    /// --shutdown-grace), then exit 0. Exit 2: configuration error.
    Serve(Box<ServeArgs>),
    /// Run as a Vela plugin step: check the pipeline file of the build this step runs
    /// in, configured by the step's parameters (PARAMETER_PIPELINE, default .vela.yml;
    /// PARAMETER_NAMESPACE, PARAMETER_PODS_TEMPLATE, PARAMETER_FAIL_ON missing or
    /// unverified, PARAMETER_PULL_SECRETS, PARAMETER_DOCKER_CONFIG, PARAMETER_PLATFORM,
    /// PARAMETER_DEADLINE, PARAMETER_INCLUDE_ON_START, PARAMETER_FORMAT), with the
    /// build's VELA_* variables substituted as the compiler does. See docs/vela.md.
    ///
    /// Exit codes: 0 the step passes; 1 an image failed; 3 an image is unverified
    /// (with PARAMETER_FAIL_ON=unverified); 2 a bad parameter or pipeline.
    VelaPlugin,
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

/// Where credentials, mirrors and the cluster are found; shared by check, explain and
/// serve (the node's view: what every check of a process uses).
#[derive(Debug, Args)]
struct NodeArgs {
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
    /// The kubelet's CredentialProviderConfig (YAML or JSON, or a directory of them),
    /// as the kubelet's flag of the same name: its plugins run for the images their
    /// matchImages match, after the pull secrets and the node's files.
    #[arg(
        long,
        value_name = "FILE",
        help_heading = "Credentials",
        requires = "image_credential_provider_bin_dir"
    )]
    image_credential_provider_config: Option<PathBuf>,
    /// Where the credential provider plugins' programs are (the kubelet's flag).
    #[arg(
        long,
        value_name = "DIR",
        help_heading = "Credentials",
        requires = "image_credential_provider_config"
    )]
    image_credential_provider_bin_dir: Option<PathBuf>,
    /// How long one credential provider plugin run may take (the kubelet's: 1m); the
    /// deadline bounds it too.
    #[arg(long, default_value = "1m", value_parser = parse_duration, help_heading = "Credentials")]
    image_credential_provider_timeout: Duration,

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
    /// containerd's config.toml: its CRI registry section as containerd 1.6 applies it
    /// (config_path as the hosts directory, else the deprecated mirrors and configs.tls;
    /// configs.auth for each contacted host when the pull carries no credentials).
    #[arg(
        long,
        value_name = "PATH",
        help_heading = "Mirrors",
        group = "mirror_source"
    )]
    containerd_config: Option<PathBuf>,
    /// Docker daemon.json: its registry-mirrors (Docker Hub only) and insecure-registries.
    #[arg(
        long,
        value_name = "PATH",
        help_heading = "Mirrors",
        group = "mirror_source"
    )]
    docker_daemon_config: Option<PathBuf>,
    /// Read the standard paths of a node running this runtime: crio
    /// (/etc/containers/registries.conf), containerd (/etc/containerd/config.toml when
    /// present, else /etc/containerd/certs.d), docker
    /// (/etc/docker/daemon.json).
    #[arg(
        long,
        value_name = "RUNTIME",
        help_heading = "Mirrors",
        group = "mirror_source"
    )]
    node_config: Option<String>,
    /// Allow plain HTTP and unverified TLS for this registry (host or host:port).
    /// localhost and 127.0.0.0/8 may use plain HTTP without it, unless a hosts.toml or
    /// registries.conf says otherwise (as containerd and CRI-O). Repeatable.
    #[arg(long, value_name = "HOST[:PORT]", help_heading = "Mirrors")]
    insecure_registry: Vec<String>,

    /// kubeconfig file. Default: $KUBECONFIG, else ~/.kube/config, else in-cluster.
    #[arg(long, value_name = "PATH", help_heading = "Kubernetes")]
    kubeconfig: Option<PathBuf>,
    /// kubeconfig context, as in kubectl.
    #[arg(long, value_name = "NAME", help_heading = "Kubernetes")]
    context: Option<String>,
}

/// The build Pod's own pull secrets: files, or the cluster's for a namespace; check and
/// explain (serve takes them per request).
#[derive(Debug, Args)]
struct PodArgs {
    /// A pull secret: a Secret manifest (YAML or JSON, kubernetes.io/dockerconfigjson or
    /// kubernetes.io/dockercfg; a List or several documents are fine). Repeatable. Its
    /// keys go in one keyring, as the kubelet builds it.
    #[arg(long, value_name = "FILE", help_heading = "Credentials")]
    pull_secret: Vec<PathBuf>,
    /// The build namespace: read the pull secrets from the cluster, as the build Pod
    /// will get them (the pods template's imagePullSecrets, else its ServiceAccount's).
    #[arg(long, short = 'n', value_name = "NS", help_heading = "Kubernetes")]
    namespace: Option<String>,
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

/// How registries are asked; shared by check and serve.
#[derive(Debug, Args)]
struct ClientArgs {
    /// Requests in flight at once, over all registries (serve: over all checks together),
    /// and the most connections open to one registry.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u16).range(1..))]
    concurrency: u16,
    /// Timeout of each HTTP request (units ms, s, m, h: e.g. 10s, 500ms).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    request_timeout: Duration,
    /// Tries per request when the registry answers 408, 429, 502, 503, 504 or the
    /// connection is refused or reset.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=10))]
    max_attempts: u32,
    /// Do not ask tags/list after a 404 (which tells a missing repository from a missing
    /// tag and suggests close tags).
    #[arg(long)]
    no_tag_hints: bool,
    /// Extra root certificates (PEM) trusted for every registry.
    #[arg(long, value_name = "PATH")]
    ca_file: Option<PathBuf>,
    /// Docker-style certificates directory: <dir>/<host[:port]>/ca.crt, and
    /// client.cert + client.key for mutual TLS.
    #[arg(long, value_name = "DIR")]
    certs_dir: Option<PathBuf>,
    /// Only these registries may be connected to, token realms and redirects included
    /// (repeatable): a host with an optional port and `*` as whole labels
    /// (registry.example.com:5000, *.example.com), an IP address, or a CIDR block
    /// (127.0.0.0/8, ::1/128), also matched against the addresses a name resolves to.
    /// Default: any registry not denied.
    #[arg(long = "allow-registry", value_name = "PATTERN", value_parser = parse_egress_rule)]
    allow_registry: Vec<EgressRule>,
    /// Never connect to these (repeatable; the same patterns; wins over
    /// --allow-registry). Link-local and cloud metadata addresses (169.254.0.0/16,
    /// fe80::/10, metadata.google.internal, ...) are always denied.
    #[arg(long = "deny-registry", value_name = "PATTERN", value_parser = parse_egress_rule)]
    deny_registry: Vec<EgressRule>,
}

/// One --allow-registry or --deny-registry pattern; clap names the option and the
/// pattern in the error.
fn parse_egress_rule(pattern: &str) -> Result<EgressRule, String> {
    EgressRule::parse(pattern).map_err(|e| e.reason)
}

/// The registry, credential, mirror and Kubernetes options of check and serve: what one
/// process's checks share.
#[derive(Debug, Args)]
struct RegistryArgs {
    #[command(flatten)]
    client: ClientArgs,
    #[command(flatten)]
    node: NodeArgs,
}

/// What [`RegistryArgs::setup`] builds: everything a `Checker` is made of.
struct Setup {
    resolver: Resolver,
    node: NodeCredentials,
    client: ClientOptions,
    concurrency: usize,
}

impl RegistryArgs {
    /// Reads the mirror configuration and the node's credentials, and sets the client's
    /// options (`platform`: check's `--platform`).
    fn setup(&self, platform: Option<Platform>, naming: Naming) -> Result<Setup, String> {
        let resolver = self.node.resolver(naming)?;
        let node = self.node.node(&resolver, naming)?;
        let client = ClientOptions {
            request_timeout: self.client.request_timeout,
            tag_hints: !self.client.no_tag_hints,
            max_attempts: self.client.max_attempts,
            platform,
            ca_file: self.client.ca_file.clone(),
            certs_dir: self.client.certs_dir.clone(),
            egress: EgressPolicy::new(
                self.client.allow_registry.clone(),
                self.client.deny_registry.clone(),
            ),
            ..ClientOptions::default()
        };
        Ok(Setup {
            resolver,
            node,
            client,
            concurrency: usize::from(self.client.concurrency),
        })
    }
}

#[derive(Debug, Args)]
struct CheckArgs {
    /// Pipeline files (Vela source YAML, a compiled build JSON) or Kubernetes manifests;
    /// the kind is detected from the content. `-` reads standard input (once). Files
    /// over 64 MiB are refused.
    #[arg(value_name = "FILE")]
    files: Vec<PathBuf>,
    /// A compiled Vela build (go-vela/server `pipeline.Build` JSON, as a worker receives
    /// it; `-` reads standard input), read as the service's `build` field: compiled
    /// whatever its keys, and its errors name the container and field instead of a line
    /// and column in a text no user wrote (what the Vela Go package's command transport
    /// sends). Repeatable.
    #[arg(long = "build", value_name = "FILE")]
    builds: Vec<PathBuf>,
    /// An image to check, with an optional pull policy (always, not_present, on_start,
    /// never, or Kubernetes' Always, IfNotPresent, Never). Default policy: always.
    /// Repeatable.
    #[arg(long = "image", value_name = "REF[=POLICY]")]
    images: Vec<String>,
    /// As --image, with the name of the container that pulls it, which the report
    /// gives as its origin (split at the first `=`): for what the build Pod pulls
    /// beside the pipeline's containers, such as a Vela worker's outputs container
    /// (`outputs=REF`). Repeatable.
    #[arg(long = "named-image", value_name = "NAME=REF[=POLICY]")]
    named_images: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Colour in text output: auto means on a terminal and NO_COLOR unset.
    #[arg(long, value_enum, default_value_t = Color::Auto)]
    color: Color,
    /// Also check on_start images now, instead of reporting them deferred.
    #[arg(long)]
    include_on_start: bool,
    /// Exit 0 when the inputs hold no image at all (default: exit 2, since nothing was
    /// checked).
    #[arg(long)]
    allow_empty: bool,
    /// Overall deadline; images without an answer by then are unreachable (units ms, s,
    /// m, h: e.g. 60s, 2m).
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    deadline: Duration,
    /// Also require this platform (os/arch[/variant], e.g. linux/arm64) in indexes and
    /// manifest lists, and in the config of single-platform images. Off by default: it
    /// needs a GET of each index (of a single image: its manifest and config blob), which
    /// counts against Docker Hub's pull rate limit (a HEAD does not).
    #[arg(long, value_name = "OS/ARCH[/VARIANT]", value_parser = Platform::parse)]
    platform: Option<Platform>,
    /// The Vela runtime the build runs on: kubernetes also checks the placeholder image
    /// every container of the build Pod starts on. Default: kubernetes with -n,
    /// --pods-template or --pods-template-file, else docker.
    #[arg(long, value_enum, value_name = "RUNTIME", help_heading = "Kubernetes")]
    runtime: Option<RuntimeArg>,
    /// The Kubernetes runtime's placeholder image, checked once under the strictest pull
    /// policy of the build's containers, for --platform, else the pods template's
    /// nodeSelector kubernetes.io/arch and kubernetes.io/os.
    #[arg(
        long,
        value_name = "REF",
        default_value = pullcheck_sources::DEFAULT_PLACEHOLDER_IMAGE,
        help_heading = "Kubernetes"
    )]
    placeholder_image: String,
    #[command(flatten)]
    registry: RegistryArgs,
    #[command(flatten)]
    pod: PodArgs,
    /// Whose words errors and remedies use: the CLI's flags, or the plugin step's
    /// `PARAMETER_*` variables (set by `plugin::run`, never by a flag).
    #[arg(skip)]
    naming: Naming,
}

/// `--runtime`.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
enum RuntimeArg {
    Docker,
    Kubernetes,
}

impl RuntimeArg {
    fn runtime(self) -> pullcheck_sources::Runtime {
        match self {
            RuntimeArg::Docker => pullcheck_sources::Runtime::Docker,
            RuntimeArg::Kubernetes => pullcheck_sources::Runtime::Kubernetes,
        }
    }
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
enum LogFormat {
    Json,
    Text,
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// Address to listen on. A non-loopback address needs --api-token-file and TLS
    /// (--tls-cert, --tls-key), unless --insecure-listen.
    #[arg(
        long,
        default_value = "127.0.0.1:8080",
        value_name = "ADDR:PORT",
        help_heading = "Service"
    )]
    listen: std::net::SocketAddr,
    /// Bearer tokens, one per line: `TOKEN`, or `TOKEN ns1,ns2` to limit the namespaces
    /// that token may name (globs). Re-read when it changes. Without it, no auth.
    #[arg(long, value_name = "PATH", help_heading = "Service")]
    api_token_file: Option<PathBuf>,
    /// A namespace requests may name (a glob such as `ci-*`). Repeatable. Default: any.
    #[arg(long = "allow-namespace", value_name = "NS", help_heading = "Service")]
    allow_namespaces: Vec<String>,
    /// Largest request body, in bytes (default 8 MiB); more gets 413.
    #[arg(long, default_value_t = pullcheck_server::DEFAULT_MAX_BODY, value_name = "BYTES", help_heading = "Service")]
    max_body: usize,
    /// Checks in flight at most; more get 503 with Retry-After.
    #[arg(long, default_value_t = pullcheck_server::DEFAULT_MAX_CHECKS, value_parser = parse_positive, help_heading = "Service")]
    max_checks: usize,
    /// Request bodies being received at once, at most (read before a check slot is
    /// taken); more get 503 with Retry-After.
    #[arg(long, default_value_t = pullcheck_server::DEFAULT_MAX_BODY_READS, value_parser = parse_positive, help_heading = "Service")]
    max_body_reads: usize,
    /// Request texts being parsed at once, at most (pipelines, manifests, admission
    /// reviews); more wait. Bounds the memory of parsing.
    #[arg(long, default_value_t = pullcheck_server::DEFAULT_MAX_PARSES, value_parser = parse_positive, help_heading = "Service")]
    max_parses: usize,
    /// How long a request head (from its first byte) and the TLS handshake may take;
    /// the connection of a slower client is closed.
    #[arg(long, default_value = "10s", value_parser = parse_duration, help_heading = "Service")]
    header_read_timeout: Duration,
    /// How long a request body may take to arrive whole; a slower one gets 408.
    #[arg(long, default_value = "30s", value_parser = parse_duration, help_heading = "Service")]
    body_read_timeout: Duration,
    /// How long a connection without a request in flight stays open (keep-alive).
    #[arg(long, default_value = "60s", value_parser = parse_duration, help_heading = "Service")]
    idle_timeout: Duration,
    /// How often HTTP/2 connections are pinged; one whose ping goes unanswered for 20s
    /// is closed.
    #[arg(long, default_value = "30s", value_parser = parse_duration, help_heading = "Service")]
    http2_keep_alive_interval: Duration,
    /// Open connections at most; over it the connection idle longest is closed (or the
    /// new one, when every one has a request in flight).
    #[arg(long, default_value_t = pullcheck_server::DEFAULT_MAX_CONNECTIONS, value_parser = parse_positive, help_heading = "Service")]
    max_connections: usize,
    /// Image uses of one check at most (each container and `images` entry, counted as
    /// read); more get 413 before anything is asked.
    #[arg(long, default_value_t = pullcheck_server::DEFAULT_MAX_IMAGES, value_parser = parse_positive, value_name = "N", help_heading = "Service")]
    max_images: usize,
    /// The longest deadline of a check; a request's deadline_seconds may shorten it.
    #[arg(long, default_value = "60s", value_parser = parse_duration, help_heading = "Service")]
    deadline: Duration,
    /// The Vela runtime of the builds checked, for requests without `runtime`:
    /// kubernetes also checks the placeholder image. Default: kubernetes for requests
    /// with `namespace` or `pods_template`, else docker.
    #[arg(long, value_enum, value_name = "RUNTIME", help_heading = "Kubernetes")]
    runtime: Option<RuntimeArg>,
    /// The Kubernetes runtime's placeholder image, for requests without
    /// `placeholder_image`; checked through the node's mirrors, as the node pulls it.
    /// Default: docker.io/kubernetes/pause:latest.
    #[arg(long, value_name = "REF", help_heading = "Kubernetes")]
    placeholder_image: Option<String>,
    /// How long requests in flight may run on after SIGTERM/SIGINT; new ones get 503 with
    /// Retry-After meanwhile, and those still running at its end get 503 too.
    #[arg(long, default_value = "20s", value_parser = parse_duration, help_heading = "Service")]
    shutdown_grace: Duration,
    /// TLS certificate chain (PEM); reloaded when it changes.
    #[arg(
        long,
        value_name = "PATH",
        requires = "tls_key",
        help_heading = "Service"
    )]
    tls_cert: Option<PathBuf>,
    /// TLS private key (PEM); reloaded when it changes.
    #[arg(
        long,
        value_name = "PATH",
        requires = "tls_cert",
        help_heading = "Service"
    )]
    tls_key: Option<PathBuf>,
    /// Listen on a non-loopback address without a token file or TLS.
    #[arg(long, help_heading = "Service")]
    insecure_listen: bool,
    /// Keep positive answers this long and answer later checks from them (e.g. 30s):
    /// tags for this duration, digests ten times as long. Negative answers are never
    /// kept. Default: off, every check asks the registries.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, help_heading = "Service")]
    cache_present: Option<Duration>,
    /// Log lines on stderr: one JSON object per line, or text.
    #[arg(long, value_enum, default_value_t = LogFormat::Json, help_heading = "Service")]
    log_format: LogFormat,
    /// Serve the validating admission webhook, POST /v1/admission (no bearer token; needs
    /// --tls-cert/--tls-key). See docs/admission.md.
    #[arg(long, help_heading = "Admission webhook")]
    admission: bool,
    /// What a failing image does: warn (allowed, with a warning per container) or deny
    /// (refused, 403). /v1/admission/warn and /v1/admission/deny force one.
    #[arg(
        long,
        value_enum,
        default_value_t = AdmissionModeArg::Warn,
        requires = "admission",
        help_heading = "Admission webhook"
    )]
    admission_mode: AdmissionModeArg,
    /// An image never asked about (a glob on the canonical reference, e.g.
    /// `docker.io/kubernetes/pause:latest`). Repeatable; replaces the default, the Vela
    /// placeholder docker.io/kubernetes/pause:latest.
    #[arg(
        long = "admission-exempt-image",
        value_name = "PATTERN",
        requires = "admission",
        help_heading = "Admission webhook"
    )]
    admission_exempt_images: Vec<String>,
    /// How long a review may take; registries not answered by then are unreachable (the
    /// object is allowed, with a warning). Keep it below the webhook's timeoutSeconds.
    #[arg(
        long,
        default_value = "8s",
        value_parser = parse_duration,
        requires = "admission",
        help_heading = "Admission webhook"
    )]
    admission_timeout: Duration,
    /// A CA (PEM) whose client certificates the admission routes require (the API
    /// server's); clients without one still reach /healthz, /readyz, /metrics and
    /// /v1/checks.
    #[arg(
        long,
        value_name = "PATH",
        requires = "admission",
        help_heading = "Admission webhook"
    )]
    admission_client_ca: Option<PathBuf>,
    /// Largest review body, in bytes (default 3 MiB, the API server's own request
    /// limit); more gets 413.
    #[arg(long, default_value_t = pullcheck_server::admission::DEFAULT_MAX_BODY, value_name = "BYTES", requires = "admission", help_heading = "Admission webhook")]
    admission_max_body: usize,
    /// Reviews in flight at most (apart from --max-checks); more get 503 with
    /// Retry-After (the API server then applies failurePolicy: Ignore).
    #[arg(long, default_value_t = pullcheck_server::admission::DEFAULT_MAX_REVIEWS, value_parser = parse_positive, value_name = "N", requires = "admission", help_heading = "Admission webhook")]
    admission_max_reviews: usize,
    /// Containers and image volumes (each an image the kubelet pulls) one review checks
    /// at most; an object with more is allowed with a warning naming this limit,
    /// unchecked.
    #[arg(long, default_value_t = pullcheck_server::admission::DEFAULT_MAX_CONTAINERS, value_parser = parse_positive, value_name = "N", requires = "admission", help_heading = "Admission webhook")]
    admission_max_containers: usize,
    #[command(flatten)]
    registry: RegistryArgs,
}

/// `--admission-mode`.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
enum AdmissionModeArg {
    /// Allowed, with a warning per failing container.
    Warn,
    /// Refused with 403 and the reasons.
    Deny,
}

fn parse_positive(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) | Err(_) => Err(format!("{text:?}: must be a whole number above zero")),
        Ok(n) => Ok(n),
    }
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
    node: NodeArgs,
    #[command(flatten)]
    pod: PodArgs,
}

/// Parses a positive duration: a whole number and a unit, `500ms`, `10s`, `2m`, `1h`.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let d = parse_any_duration(text)?;
    if d.is_zero() {
        return Err(format!("{text:?}: must be more than zero"));
    }
    Ok(d)
}

/// The units a duration option takes, for messages.
const DURATION_UNITS: &str = "ms, s, m or h (e.g. 500ms, 10s, 2m, 1h)";

/// The units, largest first, with their length in milliseconds.
const DURATION_UNIT_MS: [(&str, u64); 4] =
    [("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1)];

fn parse_any_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ','))
        .map_or((text, ""), |i| text.split_at(i));
    if number.is_empty() {
        return Err(format!(
            "{text:?} is not a duration: a whole number and a unit, {DURATION_UNITS}"
        ));
    }
    let Some(&(_, per)) = DURATION_UNIT_MS.iter().find(|(name, _)| *name == unit) else {
        return Err(if unit.is_empty() {
            format!("{text:?} has no unit; use {DURATION_UNITS}")
        } else {
            format!("{text:?}: unknown unit {unit:?}; use {DURATION_UNITS}")
        });
    };
    if number.matches(['.', ',']).count() > 1 {
        return Err(format!(
            "{text:?} is not a duration: a whole number and a unit, {DURATION_UNITS}"
        ));
    }
    if number.contains(['.', ',']) {
        return Err(format!(
            "{text:?}: a duration is a whole number and a unit, {DURATION_UNITS}; {}",
            whole_duration_hint(number, per)
        ));
    }
    // Saturates: a number of more digits than u64 holds, or one that overflows in
    // milliseconds, is as good as endless (`18446744073709551615s`).
    let n: u64 = number.parse().unwrap_or(u64::MAX);
    Ok(Duration::from_millis(n.saturating_mul(per)))
}

/// What to write instead of a fraction (`1.5` of a unit of `per` milliseconds): the
/// same length in the largest unit that makes it whole, when a whole number of
/// milliseconds is.
fn whole_duration_hint(number: &str, per: u64) -> String {
    let ms = number
        .replace(',', ".")
        .parse::<f64>()
        .ok()
        .map(|v| v * per as f64)
        .filter(|ms| ms.is_finite() && *ms >= 1.0 && (ms - ms.round()).abs() < 1e-6);
    match ms {
        Some(ms) => {
            let ms = ms.round() as u64;
            let (name, size) = DURATION_UNIT_MS
                .iter()
                .find(|(_, size)| ms.is_multiple_of(*size))
                .copied()
                .unwrap_or(("ms", 1));
            format!("write {}{name}", ms / size)
        }
        None => "the smallest step is a millisecond".to_owned(),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match &cli.command {
        Command::Serve(args) => pullcheck_server::init_logging(
            match args.log_format {
                LogFormat::Json => pullcheck_server::LogFormat::Json,
                LogFormat::Text => pullcheck_server::LogFormat::Text,
            },
            serve_log_filter(cli.verbose),
            false,
        ),
        _ => pullcheck_server::init_logging(
            pullcheck_server::LogFormat::Text,
            log_filter(cli.verbose),
            std::io::stderr().is_terminal() && !no_color(),
        ),
    }
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
        Command::Serve(args) => runtime.block_on(run_serve(*args)),
        Command::VelaPlugin => runtime.block_on(plugin::run()),
    };
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

/// The default log filter of `serve`: its requests at info (tower-http's response
/// events, in the request's span), then as `check`'s -v levels. Only pullcheck's own
/// crates (a target `pullcheck` covers every `pullcheck_*` crate) below -vvv.
fn serve_log_filter(verbose: u8) -> &'static str {
    match verbose {
        0 => "pullcheck=info,tower_http::trace=info",
        _ => log_filter(verbose),
    }
}

/// The default log filter of `check` and `explain`. Libraries (rustls, hyper, h2,
/// kube-rs) log only at -vvv: at lower levels their messages (a TLS verification error
/// at ERROR, a failed Kubernetes request) would repeat, unexplained, what pullcheck
/// reports itself.
fn log_filter(verbose: u8) -> &'static str {
    match verbose {
        0 => "pullcheck=warn",
        1 => "pullcheck=debug",
        2 => "pullcheck=trace",
        _ => "trace",
    }
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

/// What starts every error line on stderr.
const ERROR_PREFIX: &str = "pullcheck: error: ";

fn fail(error: &dyn std::fmt::Display) -> i32 {
    eprintln!("{ERROR_PREFIX}{error}");
    EXIT_USAGE
}

impl NodeArgs {
    fn resolver(&self, naming: Naming) -> Result<Resolver, String> {
        let mirrors = if let Some(path) = &self.registries_conf {
            MirrorConfig::load_registries_conf(path)
        } else if let Some(dir) = &self.hosts_dir {
            MirrorConfig::load_hosts_dir(dir)
        } else if let Some(path) = &self.containerd_config {
            MirrorConfig::load_containerd_config(path)
        } else if let Some(path) = &self.docker_daemon_config {
            MirrorConfig::load_docker_daemon(path)
        } else if let Some(profile) = &self.node_config {
            profile
                .parse::<NodeProfile>()
                .and_then(|p| MirrorConfig::from_node_profile(p, None))
        } else {
            Ok(MirrorConfig::none())
        }
        .map_err(|e| {
            let named = [
                (
                    "--registries-conf",
                    &self.registries_conf,
                    "containers registries.conf",
                ),
                ("--hosts-dir", &self.hosts_dir, "containerd hosts directory"),
                (
                    "--containerd-config",
                    &self.containerd_config,
                    "containerd config.toml",
                ),
                (
                    "--docker-daemon-config",
                    &self.docker_daemon_config,
                    "Docker daemon.json",
                ),
            ];
            // The one file option given names the error's file.
            match (e.fault(), named.iter().find(|(_, path, _)| path.is_some())) {
                (Some(fault), Some((option, _, expected))) => {
                    render::file_option(naming, option, expected, &fault)
                }
                _ => e.to_string(),
            }
        })?;
        Ok(Resolver {
            mirrors,
            insecure_registries: self.insecure_registry.clone(),
        })
    }

    /// The node's credentials; a containerd `config.toml` among them is the one
    /// `resolver` parsed for its mirrors (the file is read once).
    fn node(&self, resolver: &Resolver, naming: Naming) -> Result<NodeCredentials, String> {
        let node = NodeCredentials::load(&NodeOptions {
            docker_config: self.docker_config.clone(),
            auth_file: self.auth_file.clone(),
            env: NodeEnv::from_process(),
            helpers: HelperOptions {
                timeout: self.helper_timeout,
                ..HelperOptions::default()
            },
        })
        .map_err(|e| self.credential_error(&e, naming))?;
        let node = self.with_containerd_auths(node, resolver, naming)?;
        let (Some(config), Some(bin_dir)) = (
            &self.image_credential_provider_config,
            &self.image_credential_provider_bin_dir,
        ) else {
            return Ok(node);
        };
        let providers = CredentialProviders::load(&ProviderOptions {
            config: config.clone(),
            bin_dir: bin_dir.clone(),
            timeout: self.image_credential_provider_timeout,
        })
        .map_err(|e| self.credential_error(&e, naming))?;
        Ok(node.with_providers(std::sync::Arc::new(providers)))
    }

    /// The `configs."HOST".auth` of containerd's config.toml: `--containerd-config`'s, or
    /// with `--node-config containerd` /etc/containerd/config.toml's when present, from
    /// the parse `resolver`'s mirror configuration made of it.
    fn with_containerd_auths(
        &self,
        node: NodeCredentials,
        resolver: &Resolver,
        naming: Naming,
    ) -> Result<NodeCredentials, String> {
        let Some(config) = resolver.mirrors.containerd_config() else {
            return Ok(node);
        };
        let auths =
            pullcheck::credentials::ContainerdAuths::from_config(config).map_err(|e| {
                match (self.containerd_config.is_some(), e.fault()) {
                    (true, Some(fault)) => render::file_option(
                        naming,
                        "--containerd-config",
                        "containerd config.toml",
                        &fault,
                    ),
                    _ => e.to_string(),
                }
            })?;
        Ok(node.with_containerd_auths(std::sync::Arc::new(auths)))
    }

    /// A node credential error, named by the option that gave the file.
    fn credential_error(
        &self,
        e: &pullcheck::credentials::CredentialError,
        naming: Naming,
    ) -> String {
        let Some(fault) = e.fault() else {
            return e.to_string();
        };
        let path = std::path::Path::new(fault.path.as_ref());
        let named = [
            ("--docker-config", &self.docker_config, "Docker config.json"),
            ("--auth-file", &self.auth_file, "containers auth.json"),
            (
                "--image-credential-provider-config",
                &self.image_credential_provider_config,
                "CredentialProviderConfig",
            ),
            (
                "--image-credential-provider-bin-dir",
                &self.image_credential_provider_bin_dir,
                "credential provider bin directory",
            ),
        ];
        for (option, given, expected) in named {
            if let Some(given) = given
                && path.starts_with(given)
            {
                return render::file_option(naming, option, expected, &fault);
            }
        }
        e.to_string()
    }
}

impl PodArgs {
    /// The pods template: `--pods-template ''` is none, as go-vela/worker's empty
    /// `PipelinePodsTemplateName` (runtime/kubernetes/build.go reads a template only
    /// when the name is not empty) and the plugin's empty `PARAMETER_PODS_TEMPLATE`.
    fn template_source(&self) -> TemplateSource {
        match (&self.pods_template, &self.pods_template_file) {
            (Some(name), _) if !name.is_empty() => TemplateSource::Name(name.clone()),
            (Some(_), _) => TemplateSource::None,
            (None, Some(path)) => TemplateSource::File(path.clone()),
            (None, None) => TemplateSource::None,
        }
    }

    /// The cluster's options, when it is to be asked: with a namespace, or a template to
    /// read from it. Without either, a `--kubeconfig` or `--context` is not used, and a
    /// warning on standard error says so.
    fn cluster_options(&self, node: &NodeArgs) -> Option<ClusterOptions> {
        if self.namespace.is_none() && !matches!(self.template_source(), TemplateSource::Name(_)) {
            let unused: Vec<String> = [
                node.kubeconfig
                    .as_ref()
                    .map(|p| format!("--kubeconfig {}", p.display())),
                node.context.as_ref().map(|c| format!("--context {c}")),
            ]
            .into_iter()
            .flatten()
            .collect();
            if !unused.is_empty() {
                eprintln!(
                    "pullcheck: warning: {} not used: the cluster is asked only with \
                     --namespace or --pods-template",
                    unused.join(" and ")
                );
            }
            return None;
        }
        Some(ClusterOptions {
            kubeconfig: node.kubeconfig.clone(),
            context: node.context.clone(),
            namespace: self.namespace.clone().unwrap_or_default(),
        })
    }
}

/// Connects to the cluster when `options` says to. An error about the `--kubeconfig`
/// file is named by the option.
async fn connect(
    options: Option<&ClusterOptions>,
    naming: Naming,
) -> Result<Option<Cluster>, String> {
    match options {
        Some(o) => Cluster::connect(o)
            .await
            .map(Some)
            .map_err(|e| cluster_error(o, &e, naming)),
        None => Ok(None),
    }
}

/// A cluster connection error of `check` or `serve`: one about the `--kubeconfig` file
/// given is named by the option, with the file's fault as `render::file_option` words it.
fn cluster_error(
    options: &ClusterOptions,
    error: &pullcheck_kube::KubeError,
    naming: Naming,
) -> String {
    match error {
        pullcheck_kube::KubeError::Kubeconfig {
            file,
            from_env: false,
            kind,
            line,
            column,
            message,
        } if options
            .kubeconfig
            .as_ref()
            .is_some_and(|path| path.display().to_string() == *file) =>
        {
            let fault = pullcheck_files::FileFault {
                path: file.as_str().into(),
                kind: *kind,
                line: *line,
                column: *column,
                message: message.as_str().into(),
            };
            render::file_option(naming, "--kubeconfig", "kubeconfig", &fault)
        }
        _ => render::kube_error(naming, error),
    }
}

/// Reads the `--pull-secret` files; the error names every one that is bad, one per line.
fn read_pull_secret_files(files: &[PathBuf], naming: Naming) -> Result<Vec<PullSecret>, String> {
    let mut secrets = Vec::new();
    let mut errors = Vec::new();
    for file in files {
        match PullSecret::read_manifests(file) {
            Ok(s) => secrets.extend(s),
            Err(e) => errors.push(match e.fault() {
                Some(fault) => render::file_option(
                    naming,
                    "--pull-secret",
                    "Secret manifest (kubernetes.io/dockerconfigjson or dockercfg)",
                    &fault,
                ),
                None => format!(
                    "{} {}: {e}",
                    plugin::option_name(naming, "--pull-secret"),
                    file.display()
                ),
            }),
        }
    }
    if errors.is_empty() {
        Ok(secrets)
    } else {
        Err(errors.join(&format!("\n{ERROR_PREFIX}")))
    }
}

/// Reads the pipeline files and manifests one after the other (`-`: standard input, at
/// most once), each into its text or the error that names it.
fn read_files<'a>(
    files: impl Iterator<Item = &'a PathBuf> + Clone,
) -> Result<Vec<Result<NamedText, String>>, String> {
    if files.clone().filter(|f| f.as_os_str() == "-").count() > 1 {
        return Err("`-` (standard input) is given more than once".into());
    }
    Ok(files
        .map(|file| {
            let (name, read) = if file.as_os_str() == "-" {
                ("<stdin>".to_string(), read_stdin())
            } else {
                (file.display().to_string(), read(file))
            };
            read.map(|text| NamedText { name, text })
        })
        .collect())
}

fn read(path: &std::path::Path) -> Result<String, String> {
    named(
        pullcheck_files::read_to_string(path),
        &path.display().to_string(),
    )
}

fn read_stdin() -> Result<String, String> {
    named(
        pullcheck_files::read_from(std::io::stdin().lock()).and_then(pullcheck_files::text),
        "<stdin>",
    )
}

/// An input's text or read error (`pullcheck_files`: at most 64 MiB, UTF-8 named by
/// line and column), its error named `name`.
fn named(read: std::io::Result<String>, name: &str) -> Result<String, String> {
    read.map_err(|e| match e.kind() {
        std::io::ErrorKind::FileTooLarge => format!("{name}: {e}; not read"),
        std::io::ErrorKind::InvalidData => format!("{name}:{e}"),
        _ => format!("{name}: cannot read: {e}"),
    })
}

async fn run_check(args: CheckArgs) -> i32 {
    if args.files.is_empty()
        && args.builds.is_empty()
        && args.images.is_empty()
        && args.named_images.is_empty()
    {
        return fail(&"nothing to check: give pipeline files and/or --image REF[=POLICY]");
    }
    let mut images = Vec::new();
    for image in &args.images {
        match pullcheck::input::image_arg_use(image) {
            Ok(u) => images.push(u),
            Err(e) => return fail(&format!("--image {image:?}: {}", e.message)),
        }
    }
    for arg in &args.named_images {
        match named_image(arg) {
            Ok(u) => images.push(u),
            Err(e) => return fail(&e),
        }
    }
    check_uses(args, images, Vec::new()).await
}

/// `check` of `args` with `images` beside its files (and `warnings` first in the
/// report): the exit code.
async fn check_uses(
    args: CheckArgs,
    images: Vec<pullcheck::input::ImageUse>,
    warnings: Vec<String>,
) -> i32 {
    let setup = match args.registry.setup(args.platform.clone(), args.naming) {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    let ready = match gather_within_deadline(&args, images).await {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    for chain in &ready.gathered.walked {
        tracing::debug!("pull secrets: {chain}");
    }
    let checker_options = CheckerOptions {
        concurrency: setup.concurrency,
        registry: setup.client,
        cache_present: None,
    };
    let checker = match Checker::new(checker_options, setup.resolver, setup.node) {
        Ok(c) => c,
        Err(e) => return fail(&render::checker_error(args.naming, &e)),
    };
    let mut report = ready.check(&checker).await;
    report.warnings.splice(0..0, warnings);
    let report = render::report(args.naming, report);
    let text = match args.format {
        Format::Json => format!("{}\n", report.to_json()),
        Format::Text => {
            let color = match args.color {
                Color::Always => true,
                Color::Never => false,
                Color::Auto => std::io::stdout().is_terminal() && !no_color(),
            };
            let width = std::io::stdout()
                .is_terminal()
                .then(terminal_width)
                .flatten();
            render::text(&report, color, width)
        }
    };
    emit(&text, report.exit_code())
}

/// A `--named-image NAME=REF[=POLICY]`: [`pullcheck::input::image_arg_use`] of
/// `REF[=POLICY]`, its origin named NAME.
fn named_image(arg: &str) -> Result<pullcheck::input::ImageUse, String> {
    let Some((name, image)) = arg.split_once('=').filter(|(name, _)| !name.is_empty()) else {
        return Err(format!(
            "--named-image {arg:?}: expected NAME=REF[=POLICY], a container name before `=`"
        ));
    };
    let mut image_use = pullcheck::input::image_arg_use(image)
        .map_err(|e| format!("--named-image {arg:?}: {}", e.message))?;
    image_use.origin.name = name.to_owned();
    Ok(image_use)
}

/// Reads the inputs, then runs the Kubernetes lookups ([`pullcheck_sources`]) on a
/// runtime worker, watched from here, so that `--deadline` bounds them even when a
/// kubeconfig exec plugin (run by kube-rs with a blocking `std::process` call) holds that
/// worker, where no timer inside the task could fire. At the deadline the run ends with
/// an error, and the process exits without waiting for a stuck thread. Also returns when
/// `--deadline` started: after the inputs were read, before the first Kubernetes request.
async fn gather_within_deadline(
    args: &CheckArgs,
    images: Vec<pullcheck::input::ImageUse>,
) -> Result<pullcheck_sources::Ready, String> {
    // Reading the inputs takes what it takes (a slow stdin); the lookups do not.
    // Every file is read before any error is shown, so that all bad ones are named.
    let naming = args.naming;
    let pull_secrets = read_pull_secret_files(&args.pod.pull_secret, naming);
    let template_file = args.pod.pods_template_file.as_ref().map(|path| {
        // Read here first, so that its error names the option.
        pullcheck_kube::read_template_file(path).map_err(|e| {
            // An input error has a position when the file was read and did not parse.
            let fault = pullcheck_files::FileFault {
                path: e.file.as_deref().unwrap_or_default().into(),
                kind: if e.line.is_some() {
                    pullcheck_files::FaultKind::Invalid
                } else {
                    pullcheck_files::FaultKind::Unreadable
                },
                line: e.line,
                column: e.column,
                message: e.message.as_str().into(),
            };
            render::file_option(
                naming,
                "--pods-template-file",
                "PipelinePodsTemplate",
                &fault,
            )
        })
    });
    // The files, then the --build files (compiled whatever their keys).
    let files = read_files(args.files.iter().chain(&args.builds));
    let build_from = args.files.len();
    // Each file's error, in file order: its reading, or its parsing below.
    let mut file_errors: Vec<Option<String>> = Vec::new();
    // The file of each of the request's inputs.
    let mut file_of = Vec::new();
    let mut inputs = Vec::new();
    for (i, read) in files.iter().flatten().enumerate() {
        match read {
            Ok(text) => {
                file_of.push(i);
                inputs.push(pullcheck_sources::Input {
                    text: text.clone(),
                    kind: (i >= build_from).then_some(pullcheck_sources::InputKind::Build),
                });
                file_errors.push(None);
            }
            Err(e) => file_errors.push(Some(e.clone())),
        }
    }
    let request = pullcheck_sources::CheckRequest {
        inputs,
        images,
        pull_secrets: pull_secrets.as_ref().cloned().unwrap_or_default(),
        namespace: args.pod.namespace.clone(),
        template: args.pod.template_source(),
        runtime: args.runtime.map(RuntimeArg::runtime),
        placeholder_image: Some(args.placeholder_image.clone()),
        platform: args.platform.clone(),
        deadline: args.deadline,
        deadline_start: None,
        include_on_start: args.include_on_start,
        allow_empty: args.allow_empty,
        // Without --namespace, the kubeconfig context's namespace is the build's.
        cluster_namespace: true,
        setting_name: render::setting,
    };
    let mut nothing_to_check = None;
    let prepared = match request.read() {
        Ok(p) => Some(p),
        Err(RequestError::Inputs(errors)) => {
            for (i, e) in errors {
                file_errors[file_of[i]] = Some(e.to_string());
            }
            None
        }
        Err(e @ RequestError::NothingToCheck(_)) => {
            nothing_to_check = Some(e);
            None
        }
        Err(e) => return Err(render::request_error(naming, &e)),
    };
    let inputs_error = match &files {
        Ok(_) => {
            let errors: Vec<String> = file_errors.into_iter().flatten().collect();
            (!errors.is_empty()).then(|| errors.join(&format!("\n{ERROR_PREFIX}")))
        }
        Err(e) => Some(e.clone()),
    };
    let errors: Vec<String> = [
        pull_secrets.as_ref().err(),
        template_file.as_ref().and_then(|t| t.as_ref().err()),
        inputs_error.as_ref(),
    ]
    .into_iter()
    .flatten()
    .cloned()
    .collect();
    if !errors.is_empty() {
        return Err(errors.join(&format!("\n{ERROR_PREFIX}")));
    }
    if let Some(e) = nothing_to_check {
        return Err(render::request_error(naming, &e));
    }
    let Some(prepared) = prepared else {
        return Err("the inputs could not be read".into());
    };
    let started = prepared
        .options()
        .deadline_start
        .unwrap_or_else(std::time::Instant::now);
    let Some(cluster) = args.pod.cluster_options(&args.registry.node) else {
        // No cluster lookup: nothing to watch, the deadline is the registries'.
        return prepared
            .gather(None)
            .await
            .map_err(|e| render::request_error(naming, &e));
    };
    let task = tokio::spawn(async move {
        let cluster = connect(Some(&cluster), naming).await?;
        prepared
            .gather(cluster.as_ref())
            .await
            .map_err(|e| render::request_error(naming, &e))
    });
    await_lookups(task, started, args.deadline, naming).await
}

/// Awaits `task`, Kubernetes lookups on a runtime worker, until `deadline` after
/// `started`. Past it, prints [`RequestError::LookupDeadline`] in `naming`'s words and
/// exits 2 at once: the worker may be held by a blocking exec plugin, which nothing can
/// interrupt or wait for. Only for a task that asks the cluster.
async fn await_lookups<T>(
    task: tokio::task::JoinHandle<Result<T, String>>,
    started: std::time::Instant,
    deadline: Duration,
    naming: Naming,
) -> Result<T, String> {
    let watch = tokio::time::Instant::from_std(pullcheck::deadline_at(started, deadline));
    match tokio::time::timeout_at(watch, task).await {
        Ok(joined) => joined.map_err(|e| format!("the Kubernetes lookups failed: {e}"))?,
        Err(_) => {
            fail(&render::request_error(
                naming,
                &RequestError::LookupDeadline(deadline),
            ));
            std::process::exit(2);
        }
    }
}

async fn run_serve(args: ServeArgs) -> i32 {
    let setup = match args.registry.setup(None, Naming::Cli) {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    let node = &args.registry.node;
    let cluster = ClusterOptions {
        kubeconfig: node.kubeconfig.clone(),
        context: node.context.clone(),
        namespace: String::new(),
    };
    let options = pullcheck_server::ServeOptions {
        listen: args.listen,
        resolver: setup.resolver,
        node: setup.node,
        client: setup.client,
        concurrency: setup.concurrency,
        cluster: Some(cluster.clone()),
        cluster_required: node.kubeconfig.is_some() || node.context.is_some(),
        api_token_file: args.api_token_file,
        allow_namespaces: args.allow_namespaces,
        max_body: args.max_body,
        max_checks: args.max_checks,
        max_body_reads: args.max_body_reads,
        max_parses: args.max_parses,
        header_read_timeout: args.header_read_timeout,
        body_read_timeout: args.body_read_timeout,
        idle_timeout: args.idle_timeout,
        http2_keep_alive_interval: args.http2_keep_alive_interval,
        max_connections: args.max_connections,
        max_images: args.max_images,
        deadline: args.deadline,
        runtime: args.runtime.map(RuntimeArg::runtime),
        placeholder_image: args.placeholder_image,
        shutdown_grace: args.shutdown_grace,
        tls: match (args.tls_cert, args.tls_key) {
            (Some(cert), Some(key)) => Some(pullcheck_server::TlsFiles { cert, key }),
            _ => None,
        },
        insecure_listen: args.insecure_listen,
        cache_present: args.cache_present,
        admission: args
            .admission
            .then(|| pullcheck_server::admission::AdmissionOptions {
                mode: match args.admission_mode {
                    AdmissionModeArg::Warn => pullcheck_server::admission::AdmissionMode::Warn,
                    AdmissionModeArg::Deny => pullcheck_server::admission::AdmissionMode::Deny,
                },
                exempt_images: if args.admission_exempt_images.is_empty() {
                    vec![pullcheck_server::admission::DEFAULT_EXEMPT_IMAGE.to_owned()]
                } else {
                    args.admission_exempt_images
                },
                timeout: args.admission_timeout,
                client_ca: args.admission_client_ca,
                max_body: args.admission_max_body,
                max_reviews: args.admission_max_reviews,
                max_containers: args.admission_max_containers,
            }),
        setting_name: render::serve_flag,
    };
    let server = match pullcheck_server::Server::bind(options).await {
        Ok(s) => s,
        Err(pullcheck_server::ServeError::Cluster(e)) => {
            return fail(&cluster_error(&cluster, &e, Naming::Cli));
        }
        Err(pullcheck_server::ServeError::Checker(e)) => {
            return fail(&render::checker_error(Naming::Cli, &e));
        }
        Err(pullcheck_server::ServeError::Config(e)) => {
            return fail(&e.words(|s| render::serve_flag(s).to_owned()));
        }
        Err(e) => return fail(&e),
    };
    match server.run(pullcheck_server::shutdown_signal()).await {
        Ok(()) => 0,
        Err(e) => fail(&e),
    }
}

/// The width of the terminal on stdout, in columns: `COLUMNS` when set, else the
/// terminal's own. `None` when unknown or too narrow to wrap into (under 40 columns).
fn terminal_width() -> Option<usize> {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .or_else(|| terminal_size::terminal_size().map(|(w, _)| usize::from(w.0)))
        .filter(|w| *w >= 40)
}

/// `NO_COLOR` set to a non-empty value (no-color.org), or a dumb terminal.
fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
        || std::env::var_os("TERM").is_some_and(|t| t == "dumb")
}

async fn run_explain(args: ExplainArgs) -> i32 {
    let (resolver, node) = match args
        .node
        .resolver(Naming::Cli)
        .and_then(|r| args.node.node(&r, Naming::Cli).map(|n| (r, n)))
    {
        Ok(both) => both,
        Err(e) => return fail(&e),
    };
    // The request's rules for the namespace and the template's name, as check's.
    let names = pullcheck_sources::CheckRequest {
        namespace: args.pod.namespace.clone(),
        template: args.pod.template_source(),
        cluster_namespace: true,
        ..pullcheck_sources::CheckRequest::default()
    };
    if let Err(e) = names.validate() {
        return fail(&render::request_error(Naming::Cli, &e));
    }
    let cluster = args.pod.cluster_options(&args.node);
    if let (None, Some(path)) = (&cluster, &args.pod.pods_template_file) {
        // explain uses a template only for its pull secrets, which live in the cluster.
        eprintln!(
            "pullcheck: warning: --pods-template-file {} not used: explain reads a \
             template's pull secrets from the cluster, with --namespace",
            path.display()
        );
    }
    let template = args.pod.template_source();
    let chain = match cluster {
        // No cluster lookup: nothing to watch.
        None => None,
        Some(cluster) => {
            let task = tokio::spawn(async move {
                match connect(Some(&cluster), Naming::Cli).await? {
                    Some(c) => c
                        .build_pull_secrets(&template)
                        .await
                        .map(Some)
                        .map_err(|e| e.to_string()),
                    None => Ok(None),
                }
            });
            let started = std::time::Instant::now();
            match await_lookups(task, started, args.deadline, Naming::Cli).await {
                Ok(c) => c,
                Err(e) => return fail(&e),
            }
        }
    };
    let keyring = match read_pull_secret_files(&args.pod.pull_secret, Naming::Cli)
        .map_err(SourceError::from)
        .and_then(|s| pullcheck_sources::keyring_of(&s, chain.as_ref()))
    {
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

    /// A Secret whose docker config cannot be decoded (a username that is a number):
    /// in the plugin the error names `PARAMETER_PULL_SECRETS`, never the CLI's flag
    /// (rev24 review, D6).
    #[test]
    fn a_bad_pull_secret_is_named_in_the_naming_s_words() {
        use base64::Engine as _;
        let dir = pullcheck_testkit::TempDir::new("pull-secret").expect("temp dir");
        let config = base64::engine::general_purpose::STANDARD
            .encode(r#"{"auths":{"127.0.0.1:1":{"username":5}}}"#);
        let file = dir.path().join("bad.yaml");
        std::fs::write(
            &file,
            format!(
                "apiVersion: v1\nkind: Secret\nmetadata: {{name: bad}}\n\
                 type: kubernetes.io/dockerconfigjson\ndata: {{.dockerconfigjson: {config}}}\n"
            ),
        )
        .expect("write");
        let plugin = read_pull_secret_files(std::slice::from_ref(&file), Naming::Plugin)
            .expect_err("the secret is bad");
        assert!(plugin.starts_with("PARAMETER_PULL_SECRETS "), "{plugin}");
        let cli = read_pull_secret_files(&[file], Naming::Cli).expect_err("the secret is bad");
        assert!(cli.starts_with("--pull-secret "), "{cli}");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("7").unwrap_err().contains("no unit"));
        for (text, hint) in [
            ("1.5s", "write 1500ms"),
            ("1,5s", "write 1500ms"),
            (".5s", "write 500ms"),
            ("1.s", "write 1s"),
            ("2.5m", "write 150s"),
            ("0.5h", "write 30m"),
            ("1.5ms", "the smallest step is a millisecond"),
        ] {
            let message = parse_duration(text).unwrap_err();
            assert!(message.contains(hint), "{text}: {message}");
            assert!(message.contains("whole number"), "{text}: {message}");
        }
        assert_eq!(
            parse_duration("99999999999999999999s"),
            Ok(Duration::from_millis(u64::MAX))
        );
        assert!(
            parse_duration("1.5.5s")
                .unwrap_err()
                .contains("is not a duration")
        );
        assert_eq!(
            parse_duration("18446744073709551615m"),
            Ok(Duration::from_millis(u64::MAX))
        );
        assert!(parse_duration("1.5").unwrap_err().contains("no unit"));
        assert!(parse_duration("ten").is_err());
        assert_eq!(parse_duration("5h"), Ok(Duration::from_secs(5 * 3600)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("0ms").is_err());
    }

    #[test]
    fn cli_is_well_formed() {
        use clap::CommandFactory as _;
        Cli::command().debug_assert();
    }
}
