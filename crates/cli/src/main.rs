//! The `pullcheck` command: a thin layer over the `pullcheck` library.

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use pullcheck::report::EXIT_USAGE;
use pullcheck::resolve::{DockerConfig, Keyring};
use pullcheck::{CheckOptions, Checker, Error};

/// Checks, before a build starts, that every image it will pull exists in its registry.
#[derive(Debug, Parser)]
#[command(name = "pullcheck", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// More log output on stderr (-v debug, -vv trace). Secrets are never logged.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check every image of pipelines (Vela .vela.yml or a compiled build JSON) and
    /// --image arguments against their registries.
    ///
    /// Exit codes: 0 every checked image is present; 1 an image failed (missing,
    /// no_access, denied, blocked, invalid); 3 nothing failed but some image could not
    /// be verified (unreachable); 2 usage or configuration error.
    Check(CheckArgs),
    /// Show how references are understood: the normalised parts, and the endpoints and
    /// credentials a check would use. Sends no request.
    Explain(ExplainArgs),
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

#[derive(Debug, Args)]
struct Registries {
    /// Docker config: a config.json file, or a directory holding one. Default:
    /// $DOCKER_CONFIG/config.json, else ~/.docker/config.json.
    #[arg(long, value_name = "PATH")]
    docker_config: Option<PathBuf>,
    /// Allow plain HTTP and unverified TLS for this registry (host or host:port).
    /// localhost and 127.0.0.0/8 may use plain HTTP without it. Repeatable.
    #[arg(long, value_name = "HOST[:PORT]")]
    insecure_registry: Vec<String>,
}

#[derive(Debug, Args)]
struct CheckArgs {
    /// Pipeline files: Vela source YAML or a compiled build JSON (detected from content).
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
    /// Do not ask tags/list after a 404 (which tells a missing repository from a missing
    /// tag and suggests close tags).
    #[arg(long)]
    no_tag_hints: bool,
    #[command(flatten)]
    registries: Registries,
}

#[derive(Debug, Args)]
struct ExplainArgs {
    /// References to explain.
    #[arg(value_name = "REF", required = true)]
    references: Vec<String>,
    /// Output format; json prints one object per reference, one per line.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    #[command(flatten)]
    registries: Registries,
}

/// Parses `10s`, `500ms`, `2m`, or a bare number of seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
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
    let code = match cli.command {
        Command::Check(args) => run_check(args),
        Command::Explain(args) => run_explain(args),
    };
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "pullcheck=debug,pullcheck_registry=debug,pullcheck_cli=debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("PULLCHECK_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none())
        .try_init();
}

fn keyring(registries: &Registries) -> Result<Keyring, Error> {
    Ok(Keyring::from_docker_config(DockerConfig::load(
        registries.docker_config.as_deref(),
    )?))
}

fn fail(error: &dyn std::fmt::Display) -> i32 {
    eprintln!("pullcheck: error: {error}");
    EXIT_USAGE
}

fn run_check(args: CheckArgs) -> i32 {
    if args.files.is_empty() && args.images.is_empty() {
        return fail(&"nothing to check: give pipeline files and/or --image REF[=POLICY]");
    }
    let mut uses = Vec::new();
    for file in &args.files {
        match pullcheck::input::read_pipeline_file(file) {
            Ok(mut u) => uses.append(&mut u),
            Err(e) => return fail(&e),
        }
    }
    for image in &args.images {
        match pullcheck::input::parse_image_arg(image) {
            Ok(u) => uses.push(u),
            Err(e) => return fail(&e),
        }
    }
    let keyring = match keyring(&args.registries) {
        Ok(k) => k,
        Err(e) => return fail(&e),
    };
    let options = CheckOptions {
        include_on_start: args.include_on_start,
        concurrency: usize::from(args.concurrency),
        request_timeout: args.request_timeout,
        deadline: args.deadline,
        insecure_registries: args.registries.insecure_registry.clone(),
        tag_hints: !args.no_tag_hints,
    };
    let checker = match Checker::new(options, keyring) {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return fail(&format!("cannot start the async runtime: {e}")),
    };
    let report = runtime.block_on(checker.check(uses));
    match args.format {
        Format::Json => println!("{}", report.to_json()),
        Format::Text => {
            let color = match args.color {
                Color::Always => true,
                Color::Never => false,
                Color::Auto => {
                    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
                }
            };
            print!("{}", report.to_text(color));
        }
    }
    report.exit_code()
}

fn run_explain(args: ExplainArgs) -> i32 {
    let keyring = match keyring(&args.registries) {
        Ok(k) => k,
        Err(e) => return fail(&e),
    };
    let mut any_invalid = false;
    for input in &args.references {
        let explanation =
            pullcheck::explain::explain(input, &keyring, &args.registries.insecure_registry);
        any_invalid |= !explanation.ok;
        match args.format {
            Format::Json => match serde_json::to_string(&explanation) {
                Ok(line) => println!("{line}"),
                Err(e) => return fail(&e),
            },
            Format::Text => print!("{}", explanation.to_text()),
        }
    }
    if any_invalid { 1 } else { 0 }
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
    }

    #[test]
    fn cli_is_well_formed() {
        use clap::CommandFactory as _;
        Cli::command().debug_assert();
    }
}
