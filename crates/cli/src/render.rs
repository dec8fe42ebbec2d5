//! The CLI's words for the library's findings: remedies and configuration gaps come from
//! the libraries as data ([`Remedy`], [`ConfigGap`]) and are worded here, with this
//! program's flags. No other crate names a flag of the CLI.

use std::fmt::Write as _;

use pullcheck::input::{ContainerKind, Origin};
use pullcheck::report::{ImageReport, Remedy, Report, Status, escape_controls};
use pullcheck_files::{FaultKind, FileFault};
use pullcheck_kube::{ConfigGap, KubeError};
use pullcheck_server::ServeSetting;
use pullcheck_sources::{NameOf, RequestError, Setting};

/// Whose words: the CLI's flags, or the Vela plugin's variables (docs/vela.md). Passed
/// down from the command that runs (`CheckArgs::naming`), never read from a global.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Naming {
    /// `pullcheck check`: flags (`--include-on-start`, `--kubeconfig`).
    #[default]
    Cli,
    /// The plugin step: `PARAMETER_*` variables and `KUBECONFIG`.
    Plugin,
}

/// A row's remedies in `naming`'s words: `trust its CA with --ca-file PEM or
/// --certs-dir DIR (DIR/HOST/ca.crt), or allow unverified TLS with --insecure-registry
/// HOST`; the plugin's deferred row says `check now with PARAMETER_INCLUDE_ON_START=true`.
pub fn remedies_named(naming: Naming, remedies: &[Remedy]) -> String {
    remedies
        .iter()
        .map(|r| match r {
            Remedy::TrustCa { host } => {
                format!("trust its CA with --ca-file PEM or --certs-dir DIR (DIR/{host}/ca.crt)")
            }
            Remedy::AllowInsecure { host } => {
                format!("allow unverified TLS with --insecure-registry {host}")
            }
            Remedy::IncludeOnStart => match naming {
                Naming::Cli => "check now with --include-on-start".to_owned(),
                Naming::Plugin => "check now with PARAMETER_INCLUDE_ON_START=true".to_owned(),
            },
            Remedy::GiveCredential { host } => match naming {
                Naming::Cli => format!(
                    "give a credential for {host} with --docker-config PATH, --auth-file PATH \
                     or --pull-secret FILE"
                ),
                Naming::Plugin => format!(
                    "give a credential for {host} with PARAMETER_DOCKER_CONFIG or \
                     PARAMETER_PULL_SECRETS"
                ),
            },
        })
        .collect::<Vec<_>>()
        .join(", or ")
}

/// A warning of the plugin step about its own parameters: `PARAMETER_NAMESPCE is no
/// parameter of the plugin, so it does nothing (did you mean `namespace`?)`.
pub fn plugin_warning(warning: &crate::plugin::PluginWarning) -> String {
    match warning {
        crate::plugin::PluginWarning::UnknownParameter { variable, closest } => {
            let key = variable
                .strip_prefix("PARAMETER_")
                .unwrap_or(variable)
                .to_ascii_lowercase();
            let hint = match closest {
                Some(c) => format!(" (did you mean `{c}`?)"),
                None => String::new(),
            };
            format!(
                "{variable} (the step's `parameters: {{{key}: ...}}`) is no parameter of the \
                 pullcheck plugin, so it does nothing{hint}"
            )
        }
    }
}

/// A setting of `pullcheck serve` by its flag (`--max-images`), as the service names it
/// in its answers, logs and configuration errors
/// ([`pullcheck_server::ServeOptions::setting_name`]).
pub fn serve_flag(setting: ServeSetting) -> &'static str {
    match setting {
        ServeSetting::MaxBody => "--max-body",
        ServeSetting::MaxChecks => "--max-checks",
        ServeSetting::MaxBodyReads => "--max-body-reads",
        ServeSetting::MaxParses => "--max-parses",
        ServeSetting::MaxConnections => "--max-connections",
        ServeSetting::MaxImages => "--max-images",
        ServeSetting::HeaderReadTimeout => "--header-read-timeout",
        ServeSetting::BodyReadTimeout => "--body-read-timeout",
        ServeSetting::IdleTimeout => "--idle-timeout",
        ServeSetting::Http2KeepAliveInterval => "--http2-keep-alive-interval",
        ServeSetting::ShutdownGrace => "--shutdown-grace",
        ServeSetting::ApiTokenFile => "--api-token-file",
        ServeSetting::AllowNamespace => "--allow-namespace",
        ServeSetting::Tls => "--tls-cert/--tls-key",
        ServeSetting::InsecureListen => "--insecure-listen",
        ServeSetting::PlaceholderImage => "--placeholder-image",
        ServeSetting::CachePresent => "--cache-present",
        ServeSetting::Kubeconfig => "--kubeconfig, --context",
        ServeSetting::Admission => "--admission",
        ServeSetting::AdmissionExemptImage => "--admission-exempt-image",
        ServeSetting::AdmissionClientCa => "--admission-client-ca",
        ServeSetting::AdmissionMaxBody => "--admission-max-body",
        ServeSetting::AdmissionMaxReviews => "--admission-max-reviews",
        ServeSetting::AdmissionMaxContainers => "--admission-max-containers",
        ServeSetting::CaFile => "--ca-file",
        ServeSetting::CertsDir => "--certs-dir",
        ServeSetting::InsecureRegistry => "--insecure-registry",
        ServeSetting::DockerConfig => "--docker-config",
    }
}

/// A request setting by its flag: `--namespace`, `--platform`.
pub fn setting(setting: Setting) -> &'static str {
    match setting {
        Setting::Namespace => "--namespace",
        Setting::Platform => "--platform",
    }
}

/// A [`RequestError`] in `naming`'s words: the library's facts with the option that
/// would change them (`--allow-empty` to pass an input without images,
/// `--placeholder-image`, `--namespace` for a pods template, `--deadline`).
pub fn request_error(naming: Naming, error: &RequestError) -> String {
    let option = |o: &'static str| -> &'static str { crate::plugin::option_name(naming, o) };
    match error {
        RequestError::Inputs(errors) => errors
            .iter()
            .map(|(_, e)| e.to_string())
            .collect::<Vec<_>>()
            .join("\n"),
        RequestError::NothingToCheck(nothing) => {
            format!("{nothing} ({} passes anyway)", option("--allow-empty"))
        }
        RequestError::TemplateWithoutNamespace(name) => format!(
            "{} {name} needs {}: the template is read from the build namespace",
            option("--pods-template"),
            option("--namespace")
        ),
        RequestError::PlaceholderImage(e) => {
            format!("{}: {}", option("--placeholder-image"), e.message())
        }
        RequestError::Lookup(e) => kube_error(naming, e),
        RequestError::Template(e) | RequestError::PullSecret(e) => e.to_string(),
        RequestError::LookupDeadline(deadline) => format!(
            "the Kubernetes lookups of the pull secrets did not finish within the {} of {}",
            option("--deadline"),
            pullcheck_sources::format_duration(*deadline)
        ),
        RequestError::InvalidName { of, name, problem } => {
            let of = match of {
                NameOf::Namespace => "--namespace",
                NameOf::PodsTemplate => "--pods-template",
            };
            format!(
                "{} {name:?} {problem}: it is one path segment of the Kubernetes API",
                option(of)
            )
        }
    }
}

/// The report with every row's other attempts and remedies worded into its detail, for
/// text and JSON.
pub fn report(naming: Naming, mut report: Report) -> Report {
    report.word_attempts();
    report.word_remedies(|r| remedies_named(naming, r));
    // The service's words: they name no option of either front end.
    report.word_version_warnings(pullcheck_server::version_warning);
    report
}

/// A file option's error, from the library's [`FileFault`]: `OPTION PATH: PROBLEM` when
/// the file cannot be read, `OPTION PATH: not a EXPECTED: line L, column C: PROBLEM` when
/// it is not in the format, `OPTION PATH[:L:C]: invalid EXPECTED: PROBLEM` when a value in
/// it is rejected. `OPTION` is the flag that gave the file, `EXPECTED` what it should be
/// (`Docker config.json`).
pub fn file_option(naming: Naming, option: &str, expected: &str, fault: &FileFault<'_>) -> String {
    // In the plugin, the PARAMETER_* variable that set the option.
    let option = crate::plugin::option_name(naming, option);
    let FileFault {
        path,
        kind,
        line,
        column,
        message,
    } = fault;
    match kind {
        FaultKind::Unreadable => format!("{option} {path}: {message}"),
        FaultKind::Syntax => {
            let at = match (line, column) {
                (Some(l), Some(c)) => format!("line {l}, column {c}: "),
                (Some(l), None) => format!("line {l}: "),
                _ => String::new(),
            };
            format!("{option} {path}: not a {expected}: {at}{message}")
        }
        FaultKind::Invalid => {
            let at = match (line, column) {
                (Some(l), Some(c)) => format!(":{l}:{c}"),
                (Some(l), None) => format!(":{l}"),
                _ => String::new(),
            };
            format!("{option} {path}{at}: invalid {expected}: {message}")
        }
    }
}

/// A [`pullcheck::Checker`] that cannot be built, in `naming`'s words: a CA file that
/// cannot be used names `--ca-file` ([`file_option`]: `--ca-file PATH: PROBLEM`, or
/// `--ca-file PATH: not a PEM certificate bundle: ...`).
pub fn checker_error(naming: Naming, error: &pullcheck::Error) -> String {
    match error {
        pullcheck::Error::Client(e) => match e.fault() {
            Some(fault) => file_option(naming, "--ca-file", "PEM certificate bundle", &fault),
            None => e.to_string(),
        },
        other => other.to_string(),
    }
}

/// A cluster connection error in `naming`'s words: in the CLI's, a missing context or
/// kubeconfig names `--context` and `--kubeconfig`; the plugin has neither, it reads
/// `$KUBECONFIG` or the in-cluster ServiceAccount.
pub fn kube_error(naming: Naming, error: &KubeError) -> String {
    let KubeError::Incomplete(gap) = error else {
        return error.to_string();
    };
    let (sources, name_context) = match naming {
        Naming::Cli => (
            "--kubeconfig, $KUBECONFIG, ~/.kube/config",
            "; name one (--context)",
        ),
        Naming::Plugin => ("$KUBECONFIG, ~/.kube/config", ""),
    };
    let problem = match gap {
        ConfigGap::NoCurrentContext { kubeconfig } => {
            format!("kubeconfig {kubeconfig}: it sets no current-context{name_context}")
        }
        ConfigGap::NoKubeconfigForContext => {
            format!("a context was given but there is no kubeconfig ({sources})")
        }
        ConfigGap::NoKubeconfig { in_cluster } => {
            format!("no kubeconfig ({sources}) and not in a cluster: {in_cluster}")
        }
    };
    format!("Kubernetes configuration: {problem}")
}

// ---- The text report ----

/// The report as text: one line per image (more for extra uses) with its status,
/// reference, first use, detail and the credential that answered (source and key, never
/// the secret); then warnings and a summary line. `color` adds ANSI colours to the
/// status. For a terminal `width` columns wide, a row longer than that has its detail
/// and credential on the lines below it, indented and wrapped at the width (as cargo
/// wraps its notes); `None` (output to a pipe or a file): one line per image, however
/// long.
pub fn text(report: &Report, color: bool, width: Option<usize>) -> String {
    let terminal = width;
    let mut out = String::new();
    // The reference column is as wide as the widest reference: at most 60 characters
    // on a terminal, where a long row wraps anyway; piped, up to [`PIPED_COLUMN`], so
    // that a substituted image (`written → pulled`, twice as long) keeps the rows
    // aligned. A longer one only pushes its own row.
    let column = if terminal.is_some() { 60 } else { PIPED_COLUMN };
    let width = report
        .images
        .iter()
        .map(|i| display_reference(i).chars().count())
        .max()
        .unwrap_or(0)
        .min(column);
    for image in &report.images {
        let status = format!("{:<11}", image.status.as_str());
        let status = if color {
            paint(image.status, &status)
        } else {
            status
        };
        let mut origins = image.origins.iter();
        let first = origins
            .next()
            .map(|o| describe_origin(o, &image.reference))
            .unwrap_or_default();
        let head = format!("{:<width$}  {first}", display_reference(image),);
        let mut tail = Vec::new();
        if !image.detail.is_empty() {
            tail.push(escape_controls(&image.detail).into_owned());
        }
        if let Some(mirror) = image
            .served_by_mirror()
            .filter(|_| image.status == Status::Present)
        {
            tail.push(format!("[mirror: {}]", escape_controls(mirror)));
        }
        if let Some(c) = &image.credential {
            tail.push(format!("[credential: {} key {:?}]", c.source, c.key));
        }
        let long = |w: usize| {
            let tail: usize = tail.iter().map(|t| 2 + t.chars().count()).sum();
            12 + head.chars().count() + tail > w
        };
        match terminal {
            Some(w) if !tail.is_empty() && long(w) => {
                let _ = writeln!(out, "{status} {}", head.trim_end());
                for line in wrap(&tail.join("  "), w.saturating_sub(INDENT.len()).max(20)) {
                    let _ = writeln!(out, "{INDENT}{line}");
                }
            }
            _ => {
                let _ = write!(out, "{status} {head}");
                for t in &tail {
                    let _ = write!(out, "  {t}");
                }
                out.push('\n');
            }
        }
        for origin in origins {
            let _ = writeln!(
                out,
                "{:11} {:width$}  also {}",
                "",
                "",
                describe_origin(origin, &image.reference)
            );
        }
    }
    for warning in &report.warnings {
        let _ = writeln!(out, "warning: {warning}");
    }
    let s = &report.summary;
    let mut summary = String::new();
    let _ = write!(
        summary,
        "{} image{}: {} present, {} failed, {} unverified, {} skipped, {} deferred",
        s.total,
        if s.total == 1 { "" } else { "s" },
        s.present,
        s.failed,
        s.unverified,
        s.skipped,
        s.deferred
    );
    if s.template_steps > 0 {
        let _ = write!(
            summary,
            "; {} template step{} not checked",
            s.template_steps,
            if s.template_steps == 1 { "" } else { "s" }
        );
    }
    match terminal {
        Some(w) => {
            for line in wrap(&summary, w.max(20)) {
                let _ = writeln!(out, "{line}");
            }
        }
        None => {
            let _ = writeln!(out, "{summary}");
        }
    }
    out
}

/// The widest reference column of piped text, in characters: two references of
/// Docker's longest name (255) with ` → ` between them.
const PIPED_COLUMN: usize = 2 * 255 + 3;

/// The indentation of a row's wrapped detail: under the reference, past the status.
const INDENT: &str = "            ";

/// `text` in lines of at most `width` characters, broken at spaces (a longer word keeps
/// a line of its own).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// The reference for the text report: control characters escaped, so a hostile
/// pipeline cannot split or repaint a report line.
/// A substituted image shows both: `golang:${GO} → golang:1.22`.
fn display_reference(image: &ImageReport) -> String {
    if image.reference.is_empty() {
        "(no image)".to_string()
    } else if let Some(s) = &image.substituted {
        format!(
            "{} → {}",
            escape_controls(&image.reference),
            escape_controls(s)
        )
    } else {
        escape_controls(&image.reference).into_owned()
    }
}

/// `file:line:col kind "name" (stage s)`; an image given by reference alone (its name
/// is `reference`) is `--image`, one given with a name (`--named-image`) `image "name"`.
fn describe_origin(o: &Origin, reference: &str) -> String {
    let mut s = String::new();
    match (&o.file, o.line, o.column) {
        (Some(f), Some(l), Some(c)) => {
            let _ = write!(s, "{}:{l}:{c} ", escape_controls(f));
        }
        (Some(f), Some(l), None) => {
            let _ = write!(s, "{}:{l} ", escape_controls(f));
        }
        (Some(f), None, _) => {
            let _ = write!(s, "{} ", escape_controls(f));
        }
        _ => {}
    }
    let kind = serde_json::to_value(o.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    if o.kind == ContainerKind::Image && o.name != reference {
        let _ = write!(s, "image {:?}", escape_controls(&o.name));
    } else if o.kind == ContainerKind::Image {
        // An `--image` argument: no file, no name of its own.
        s.push_str("--image");
    } else if matches!(o.kind, ContainerKind::Container | ContainerKind::Volume) {
        // The name says it all: `Deployment/web container app`, `Pod/p volume v1`.
        s.push_str(&escape_controls(&o.name));
    } else {
        let _ = write!(s, "{kind} {:?}", o.name);
    }
    if let Some(stage) = &o.stage {
        let _ = write!(s, " (stage {stage:?})");
    }
    s
}

fn paint(status: Status, text: &str) -> String {
    let code = match status {
        Status::Present => "32",
        Status::Unreachable | Status::Unresolved => "33",
        Status::Deferred | Status::Skipped => "2",
        _ => "31;1",
    };
    format!("\x1b[{code}m{text}\x1b[0m")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pullcheck::input::PullPolicy;
    use pullcheck::report::Reason;
    use pullcheck::report::fixtures::step_image as image;

    /// `serve`'s configuration errors in the CLI's words, golden: the service's settings
    /// by their flags.
    #[test]
    fn serve_config_errors_golden() {
        use pullcheck_server::ConfigError;
        let words = |e: &ConfigError| e.words(|s| serve_flag(s).to_owned());
        assert_eq!(
            words(&ConfigError::Exposed {
                listen: "0.0.0.0:8080".parse().expect("addr"),
                missing: vec![ServeSetting::ApiTokenFile, ServeSetting::Tls],
            }),
            "refusing to listen on 0.0.0.0:8080 (not loopback) without --api-token-file and \
             --tls-cert/--tls-key: anyone who reaches it could use this service's registry \
             credentials; give them, or --insecure-listen"
        );
        assert_eq!(
            words(&ConfigError::AdmissionNeedsTls),
            "--admission needs --tls-cert/--tls-key: the Kubernetes API server calls \
             admission webhooks over HTTPS only"
        );
        assert_eq!(
            words(&ConfigError::Zero(ServeSetting::MaxParses)),
            "--max-parses must be at least 1"
        );
        assert_eq!(
            words(&ConfigError::Pattern {
                setting: ServeSetting::AdmissionExemptImage,
                pattern: Some("[".into()),
                message: "unclosed character class".into(),
            }),
            "--admission-exempt-image \"[\": unclosed character class"
        );
    }

    /// The CLI's words for the request's errors, golden: each names the option that
    /// changes it (the plugin's variable where it has one).
    #[test]
    fn request_errors_golden() {
        use pullcheck_sources::{CheckRequest, EmptyInput, Held, InputKind, NothingToCheck};
        let nothing = RequestError::NothingToCheck(NothingToCheck {
            inputs: vec![EmptyInput {
                name: "cm.yaml".into(),
                read_as: InputKind::Manifests,
                held: Held::NoImage,
            }],
            warnings: vec![],
        });
        assert_eq!(
            request_error(Naming::Cli, &nothing),
            "no image to check in cm.yaml: expected Kubernetes manifests (Pod, Deployment, \
             StatefulSet, DaemonSet, ReplicaSet, Job, CronJob with containers); nothing was \
             checked (--allow-empty passes anyway)"
        );
        // The CLI's request has `cluster_namespace` (and the plugin refuses a template
        // without PARAMETER_NAMESPACE itself): no TemplateWithoutNamespace here, but
        // names that are no path segment (`--namespace ''` given explicitly).
        let invalid = |namespace: &str, template: &str| {
            CheckRequest {
                namespace: Some(namespace.into()),
                template: pullcheck_kube::TemplateSource::Name(template.into()),
                cluster_namespace: true,
                ..CheckRequest::default()
            }
            .validate()
            .expect_err("an invalid name")
        };
        assert_eq!(
            request_error(Naming::Cli, &invalid("", "t")),
            "--namespace \"\" may not be empty: it is one path segment of the Kubernetes API"
        );
        assert_eq!(
            request_error(Naming::Cli, &invalid("ci", "a/%")),
            "--pods-template \"a/%\" may not contain '/', may not contain '%': it is one \
             path segment of the Kubernetes API"
        );
        assert_eq!(
            request_error(Naming::Plugin, &invalid("ci", "..")),
            "PARAMETER_PODS_TEMPLATE \"..\" may not be '..': it is one path segment of the \
             Kubernetes API"
        );
        let two = RequestError::NothingToCheck(NothingToCheck {
            inputs: vec![
                EmptyInput {
                    name: "cm.yaml".into(),
                    read_as: InputKind::Manifests,
                    held: Held::NoImage,
                },
                EmptyInput {
                    name: "tpl.yml".into(),
                    read_as: InputKind::Pipeline,
                    held: Held::Templates {
                        steps: 1,
                        inline: 0,
                    },
                },
            ],
            warnings: vec![],
        });
        // What cm.yaml was read as; `nothing was checked` once.
        assert_eq!(
            request_error(Naming::Cli, &two),
            "no image to check in cm.yaml: expected Kubernetes manifests (Pod, Deployment, \
             StatefulSet, DaemonSet, ReplicaSet, Job, CronJob with containers); no image to \
             check in tpl.yml: its images come from templates that are not expanded (1 \
             template step); the Vela server expands them when it compiles the build, \
             pullcheck does not (check the compiled build instead); nothing was checked \
             (--allow-empty passes anyway)"
        );
        let empty = pullcheck::reference::Reference::parse_normalized("").expect_err("empty");
        let message = empty.message().to_owned();
        assert_eq!(
            request_error(Naming::Cli, &RequestError::PlaceholderImage(empty)),
            format!("--placeholder-image: {message}")
        );
        assert_eq!(
            request_error(
                Naming::Cli,
                &RequestError::LookupDeadline(std::time::Duration::from_secs(5))
            ),
            "the Kubernetes lookups of the pull secrets did not finish within the --deadline \
             of 5s"
        );
        // The plugin's watchdog (main.rs await_lookups) words it here too: its variable.
        assert_eq!(
            request_error(
                Naming::Plugin,
                &RequestError::LookupDeadline(std::time::Duration::from_millis(1))
            ),
            "the Kubernetes lookups of the pull secrets did not finish within the \
             PARAMETER_DEADLINE of 1ms"
        );
    }

    /// The golden text rows: a wording change of the text report shows here.
    #[test]
    fn text_rows_golden() {
        let mut substituted = image(Status::Present);
        substituted.reference = "alpine:${V}".into();
        substituted.substituted = Some("alpine:3.19".into());
        let mut missing = image(Status::Missing);
        missing.reference = "golang:1.2".into();
        missing.detail = "tag 1.2 not found in library/golang; did you mean 1.22?".into();
        missing.origins[0].stage = Some("build".into());
        let mut argument = image(Status::Unreachable);
        argument.origins[0] = Origin {
            file: None,
            line: None,
            column: None,
            kind: ContainerKind::Image,
            // An `--image` use is named by its reference.
            name: "alpine:3.19".into(),
            stage: None,
            pod: None,
        };
        argument.detail = "connection refused".into();
        // A `--named-image outputs=…` use is named by its container.
        let mut named = argument.clone();
        named.reference = "vela/outputs:1".into();
        named.status = Status::Present;
        named.detail = String::new();
        named.origins[0].name = "outputs".into();
        // Present from a mirror: the row names it (not the image's own registry).
        let mut mirrored = named.clone();
        mirrored.reference = "golang:1.22".into();
        mirrored.canonical = Some("docker.io/library/golang:1.22".into());
        mirrored.registry = Some("mirror.example.com:5000".into());
        mirrored.origins[0].name = "golang".into();
        // From Docker Hub's own API host: no mirror named.
        let mut hub = mirrored.clone();
        hub.reference = "golang:1.23".into();
        hub.canonical = Some("docker.io/library/golang:1.23".into());
        hub.registry = Some("registry-1.docker.io".into());
        let r = Report::new(
            vec![substituted, missing, argument, named, mirrored, hub],
            vec!["w".into()],
        );
        assert_eq!(
            text(&r, false, None),
            "present     alpine:${V} → alpine:3.19  .vela.yml:4:12 step \"test\"\n\
             missing     golang:1.2                 .vela.yml:4:12 step \"test\" (stage \"build\")  \
             tag 1.2 not found in library/golang; did you mean 1.22?\n\
             unreachable alpine:3.19                --image  connection refused\n\
             present     vela/outputs:1             image \"outputs\"\n\
             present     golang:1.22                image \"golang\"  [mirror: mirror.example.com:5000]\n\
             present     golang:1.23                image \"golang\"\n\
             warning: w\n\
             6 images: 4 present, 1 failed, 1 unverified, 0 skipped, 0 deferred\n"
        );
    }

    /// Piped, a substituted image longer than 60 characters (`written → pulled`) keeps
    /// the rows aligned: every row's origin starts in the same column (it started 60
    /// characters in on the other rows and after the whole pair on its own).
    #[test]
    fn piped_rows_stay_aligned_after_a_substituted_image() {
        let mut substituted = image(Status::Unreachable);
        substituted.reference = "127.0.0.1:1/library/golang-tools:${GO}-bookworm".into();
        substituted.substituted = Some("127.0.0.1:1/library/golang-tools:1.22-bookworm".into());
        let mut plain = image(Status::Unreachable);
        plain.reference = "127.0.0.1:1/alpine:3.19".into();
        let r = Report::new(vec![substituted, plain], vec![]);
        for terminal in [None, Some(400)] {
            let shown = text(&r, false, terminal);
            let columns: Vec<usize> = shown
                .lines()
                .take(2)
                .map(|l| {
                    let byte = l.find(".vela.yml").expect("an origin");
                    l[..byte].chars().count()
                })
                .collect();
            match terminal {
                None => assert_eq!(columns, [12 + 96 + 2; 2], "{shown}"),
                // A terminal keeps its 60-character column.
                Some(_) => assert_eq!(columns, [12 + 96 + 2, 12 + 60 + 2], "{shown}"),
            }
        }
    }

    /// The golden JSON rows (`tests/fixtures/report.golden.json`), as `--format json`
    /// writes them after [`report`] worded attempts and remedies: a renamed or dropped
    /// field shows here, in one place. `PULLCHECK_UPDATE_GOLDEN=1` rewrites the file
    /// (then the next run compares with it).
    #[test]
    fn json_rows_golden() {
        use pullcheck::input::{Field, Position, Problem, UnresolvedVariable, ValueSource};
        use pullcheck::report::{AttemptReport, MissingPart};

        // Present from the second mirror, after the first refused the connection.
        let mut mirrored = image(Status::Present);
        mirrored.registry = Some("mirror-b.example.com".into());
        mirrored.digest = Some(format!("sha256:{}", "a".repeat(64)));
        mirrored.detail = "found".into();
        let attempt = |endpoint: &str, status, reason, detail: &str, chosen| AttemptReport {
            endpoint: endpoint.into(),
            registry: endpoint.into(),
            credential: None,
            status,
            reason,
            missing: None,
            close_tags: Vec::new(),
            platforms: Vec::new(),
            retry_after: None,
            detail: detail.into(),
            chosen,
        };
        mirrored.attempts = vec![
            attempt(
                "mirror-a.example.com",
                Status::Unreachable,
                Reason::ConnectionRefused,
                "connection refused",
                false,
            ),
            attempt(
                "mirror-b.example.com",
                Status::Present,
                Reason::Found,
                "found",
                true,
            ),
        ];
        let mut tag = image(Status::Missing);
        tag.reference = "golang:1.2".into();
        tag.canonical = Some("docker.io/library/golang:1.2".into());
        tag.reason = Reason::TagNotFound;
        tag.missing = Some(MissingPart::Tag);
        tag.registry = Some("registry-1.docker.io".into());
        tag.close_tags = vec!["1.22".into()];
        tag.detail = "tag 1.2 not found in library/golang; did you mean 1.22?".into();
        let mut anonymous = image(Status::NoAccess);
        anonymous.reference = "registry.example.com/team/app:v1".into();
        anonymous.canonical = Some("registry.example.com/team/app:v1".into());
        anonymous.reason = Reason::UnauthorizedAnonymous;
        anonymous.registry = Some("registry.example.com".into());
        anonymous.detail = "the registry asks for credentials and none match".into();
        let mut unresolved = image(Status::Unresolved);
        unresolved.reference = "app:${TAG}".into();
        unresolved.canonical = None;
        unresolved.reason = Reason::UnresolvedVariable;
        unresolved.variables = vec![UnresolvedVariable {
            name: "TAG".into(),
            field: Field::Image,
            source: ValueSource::Secret {
                secret: "release_tag".into(),
            },
            default_ignored: false,
        }];
        unresolved.problems = vec![Problem {
            at: Some(Position {
                file: ".vela.yml".into(),
                line: Some(4),
                column: Some(12),
                written: None,
            }),
            message: "image \"app:${TAG}\" is known only when the build runs".into(),
        }];
        unresolved.detail =
            ".vela.yml:4:12: image \"app:${TAG}\" is known only when the build runs".into();
        let mut deferred = image(Status::Deferred);
        deferred.policy = PullPolicy::OnStart.into();
        deferred.reason = Reason::DeferredOnStart;
        deferred.remedies = vec![Remedy::IncludeOnStart];
        deferred.detail = "pulled when the step starts".into();
        let mut skipped = image(Status::Skipped);
        skipped.policy = PullPolicy::Never.into();
        skipped.reason = Reason::NeverPulled;
        skipped.detail = "pull: never".into();
        let rows = vec![mirrored, tag, anonymous, unresolved, deferred, skipped];
        let json = format!(
            "{}\n",
            report(Naming::Cli, Report::new(rows, vec![])).to_json()
        );
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/report.golden.json"
        );
        if std::env::var_os("PULLCHECK_UPDATE_GOLDEN").is_some() {
            std::fs::write(path, &json).expect("write the golden file");
            return;
        }
        assert_eq!(
            json,
            include_str!("../tests/fixtures/report.golden.json"),
            "the JSON report changed; if on purpose, rerun with PULLCHECK_UPDATE_GOLDEN=1"
        );
    }

    #[test]
    fn an_origin_cannot_split_or_repaint_a_line() {
        let origin = Origin {
            file: Some("evil\u{1b}[31m\nname.yml".into()),
            line: Some(3),
            column: Some(12),
            kind: ContainerKind::Step,
            name: "a\u{202e}b".into(),
            stage: None,
            pod: None,
        };
        let shown = describe_origin(&origin, "x");
        assert_eq!(
            shown,
            "evil\\u{1b}[31m\\nname.yml:3:12 step \"a\\u{202e}b\""
        );
    }

    #[test]
    fn an_image_volume_is_named_as_its_origin_names_it() {
        // The origin's name is already `Pod/p volume v1` (pullcheck-kube).
        let origin = Origin {
            file: Some("pod.yaml".into()),
            line: Some(9),
            column: Some(20),
            kind: ContainerKind::Volume,
            name: "Pod/p volume v1".into(),
            stage: None,
            pod: None,
        };
        assert_eq!(
            describe_origin(&origin, "x"),
            "pod.yaml:9:20 Pod/p volume v1"
        );
    }

    /// The golden renderings of the CLI's remedies: a wording change shows here.
    #[test]
    fn remedies_golden() {
        let host = "registry.example.com:5000".to_owned();
        assert_eq!(
            remedies_named(
                Naming::Cli,
                &[
                    Remedy::TrustCa { host: host.clone() },
                    Remedy::AllowInsecure { host }
                ]
            ),
            "trust its CA with --ca-file PEM or --certs-dir DIR \
             (DIR/registry.example.com:5000/ca.crt), or allow unverified TLS with \
             --insecure-registry registry.example.com:5000"
        );
        assert_eq!(
            remedies_named(Naming::Cli, &[Remedy::IncludeOnStart]),
            "check now with --include-on-start"
        );
        assert_eq!(
            remedies_named(Naming::Plugin, &[Remedy::IncludeOnStart]),
            "check now with PARAMETER_INCLUDE_ON_START=true"
        );
        let give = [Remedy::GiveCredential {
            host: "registry.example.com".into(),
        }];
        assert_eq!(
            remedies_named(Naming::Cli, &give),
            "give a credential for registry.example.com with --docker-config PATH, \
             --auth-file PATH or --pull-secret FILE"
        );
        assert_eq!(
            remedies_named(Naming::Plugin, &give),
            "give a credential for registry.example.com with PARAMETER_DOCKER_CONFIG or \
             PARAMETER_PULL_SECRETS"
        );
    }

    #[test]
    fn configuration_gaps_name_the_flags() {
        assert_eq!(
            kube_error(
                Naming::Cli,
                &KubeError::Incomplete(ConfigGap::NoKubeconfigForContext)
            ),
            "Kubernetes configuration: a context was given but there is no kubeconfig \
             (--kubeconfig, $KUBECONFIG, ~/.kube/config)"
        );
        assert_eq!(
            kube_error(
                Naming::Cli,
                &KubeError::Incomplete(ConfigGap::NoCurrentContext {
                    kubeconfig: "k.yaml".into()
                })
            ),
            "Kubernetes configuration: kubeconfig k.yaml: it sets no current-context; name one \
             (--context)"
        );
        // The plugin has neither flag.
        let in_cluster = "KUBERNETES_SERVICE_HOST is not set".to_owned();
        assert_eq!(
            kube_error(
                Naming::Plugin,
                &KubeError::Incomplete(ConfigGap::NoKubeconfig { in_cluster })
            ),
            "Kubernetes configuration: no kubeconfig ($KUBECONFIG, ~/.kube/config) and not in \
             a cluster: KUBERNETES_SERVICE_HOST is not set"
        );
        assert_eq!(
            kube_error(
                Naming::Plugin,
                &KubeError::Incomplete(ConfigGap::NoCurrentContext {
                    kubeconfig: "k.yaml".into()
                })
            ),
            "Kubernetes configuration: kubeconfig k.yaml: it sets no current-context"
        );
    }

    #[test]
    fn text_names_the_position_and_colours_only_on_request() {
        let r = Report::new(vec![image(Status::Missing)], vec!["w".into()]);
        let plain = text(&r, false, None);
        assert!(plain.contains("missing"), "{plain}");
        assert!(plain.contains(".vela.yml:4:12 step \"test\""), "{plain}");
        assert!(plain.contains("warning: w"));
        assert!(
            plain.ends_with("1 image: 0 present, 1 failed, 0 unverified, 0 skipped, 0 deferred\n")
        );
        assert!(!plain.contains('\x1b'));
        assert!(text(&r, true, None).contains("\x1b[31;1mmissing"));
        // A hostile reference cannot split or repaint a line.
        let mut hostile = image(Status::Invalid);
        hostile.reference = "alp\x1b[31mine\r\nOVERWRITE".into();
        hostile.detail = "bad\nline".into();
        let text = text(&Report::new(vec![hostile], vec![]), false, None);
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(!text.contains('\x1b') && !text.contains('\r'), "{text}");
    }
}
