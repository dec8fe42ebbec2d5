//! `pullcheck vela-plugin`: the check as a Vela plugin step, configured by Vela's
//! plugin conventions instead of flags. Vela gives a step's `parameters:` to its
//! container as `PARAMETER_<NAME>` variables (upper-cased; a list joined with `,`) and
//! the build's own as `VELA_*` variables; the step fails when the container exits
//! non-zero.
//!
//! The step reads the pipeline file from the workspace (the step's working directory)
//! as the compiler read it: its `${VELA_*}` substituted from this build's values. It is
//! then an ordinary `check` of those images: the build Pod and its placeholder already
//! exist (runtime `docker`: no placeholder is checked), and on Kubernetes the later
//! steps' images are pulled only when each starts, so `on_start` images are checked
//! too unless `PARAMETER_INCLUDE_ON_START` is `false`.

use std::collections::HashMap;
use std::path::PathBuf;

use clap::Parser as _;

/// The options the plugin's parameters become, and the variable each comes from.
const PARAMETER_OPTIONS: [(&str, &str); 6] = [
    ("--namespace", "PARAMETER_NAMESPACE"),
    ("--pods-template", "PARAMETER_PODS_TEMPLATE"),
    ("--docker-config", "PARAMETER_DOCKER_CONFIG"),
    ("--pull-secret", "PARAMETER_PULL_SECRETS"),
    ("--platform", "PARAMETER_PLATFORM"),
    ("--deadline", "PARAMETER_DEADLINE"),
];

/// The name an error gives `option`: in the plugin's naming, the `PARAMETER_*` variable
/// that set it (docs/vela.md), never the option it became; else the option itself.
pub(crate) fn option_name(naming: super::render::Naming, option: &str) -> &str {
    if naming == super::render::Naming::Plugin
        && let Some((_, variable)) = PARAMETER_OPTIONS.iter().find(|(o, _)| *o == option)
    {
        return variable;
    }
    option
}

/// The plugin's parameters, as a step's `parameters:` writes them (Vela makes each
/// `PARAMETER_<KEY>`, upper-cased: go-vela/server v0.28.8
/// `compiler/native/environment.go`).
const PARAMETERS: [&str; 10] = [
    "pipeline",
    "namespace",
    "pods_template",
    "docker_config",
    "pull_secrets",
    "platform",
    "deadline",
    "fail_on",
    "format",
    "include_on_start",
];

/// Something about the plugin's own configuration that does not stop the check, said
/// before the report (worded by `render::plugin_warning`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PluginWarning {
    /// A `PARAMETER_*` variable that is no parameter of the plugin (a misspelt one would
    /// otherwise do nothing, silently): the variable, and the parameter it is closest
    /// to, if one is near.
    UnknownParameter {
        variable: String,
        closest: Option<&'static str>,
    },
}

/// The `PARAMETER_*` variables of `env` that are none of [`PARAMETERS`], sorted.
fn unknown_parameters(env: &HashMap<String, String>) -> Vec<PluginWarning> {
    let mut out: Vec<PluginWarning> = env
        .keys()
        .filter_map(|name| {
            let key = name.strip_prefix("PARAMETER_")?.to_ascii_lowercase();
            (!PARAMETERS.contains(&key.as_str())).then(|| PluginWarning::UnknownParameter {
                variable: name.clone(),
                closest: pullcheck::input::closest_key(&key, &PARAMETERS),
            })
        })
        .collect();
    out.sort_by(|a, b| match (a, b) {
        (
            PluginWarning::UnknownParameter { variable: a, .. },
            PluginWarning::UnknownParameter { variable: b, .. },
        ) => a.cmp(b),
    });
    out
}

/// What fails the step (`PARAMETER_FAIL_ON`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FailOn {
    /// A failed image (missing, no_access, denied, blocked, invalid): exit 1. An
    /// unverified image is reported and the step passes.
    Missing,
    /// Also an unverified image (unreachable, unresolved): exit 3.
    Unverified,
}

/// The plugin's configuration from its environment.
#[derive(Debug)]
struct Plugin {
    pipeline: PathBuf,
    fail_on: FailOn,
    /// The `pullcheck check` command line the parameters make (no input files: the
    /// pipeline's uses are given apart).
    argv: Vec<String>,
}

/// A `PARAMETER_<name>` value, trimmed; `None` when unset or empty (Vela sets a
/// parameter given no value to the empty string).
fn parameter<'a>(env: &'a HashMap<String, String>, name: &str) -> Option<&'a str> {
    env.get(&format!("PARAMETER_{name}"))
        .map(|v| v.trim())
        .filter(|v| !v.is_empty())
}

/// Reads the parameters. Errors name the variable, its value and what is allowed.
fn plugin(env: &HashMap<String, String>) -> Result<Plugin, String> {
    let mut argv: Vec<String> = [
        "pullcheck",
        "check",
        "--runtime",
        "docker",
        "--color",
        "never",
    ]
    .map(String::from)
    .to_vec();
    let fail_on = match parameter(env, "FAIL_ON") {
        None | Some("missing") => FailOn::Missing,
        Some("unverified") => FailOn::Unverified,
        Some(other) => {
            return Err(format!(
                "PARAMETER_FAIL_ON={other:?}: expected missing (failed images fail the step) \
                 or unverified (unverified images too)"
            ));
        }
    };
    match parameter(env, "FORMAT") {
        None | Some("text") => argv.extend(["--format".into(), "text".into()]),
        Some("json") => argv.extend(["--format".into(), "json".into()]),
        Some(other) => return Err(format!("PARAMETER_FORMAT={other:?}: expected text or json")),
    }
    let include_on_start = match parameter(env, "INCLUDE_ON_START") {
        None => true,
        Some(v) if v.eq_ignore_ascii_case("true") => true,
        Some(v) if v.eq_ignore_ascii_case("false") => false,
        Some(other) => {
            return Err(format!(
                "PARAMETER_INCLUDE_ON_START={other:?}: expected true or false"
            ));
        }
    };
    if include_on_start {
        argv.push("--include-on-start".into());
    }
    if let Some(deadline) = parameter(env, "DEADLINE") {
        super::parse_duration(deadline)
            .map_err(|e| format!("PARAMETER_DEADLINE={deadline:?}: {e}"))?;
        argv.extend(["--deadline".into(), deadline.into()]);
    }
    if let Some(platform) = parameter(env, "PLATFORM") {
        pullcheck::registry::Platform::parse(platform)
            .map_err(|e| format!("PARAMETER_PLATFORM={platform:?}: {e}"))?;
        argv.extend(["--platform".into(), platform.into()]);
    }
    for (name, flag) in [
        ("NAMESPACE", "--namespace"),
        ("PODS_TEMPLATE", "--pods-template"),
        ("DOCKER_CONFIG", "--docker-config"),
    ] {
        if let Some(value) = parameter(env, name) {
            argv.extend([flag.into(), value.into()]);
        }
    }
    if parameter(env, "PODS_TEMPLATE").is_some() && parameter(env, "NAMESPACE").is_none() {
        return Err(
            "PARAMETER_PODS_TEMPLATE needs PARAMETER_NAMESPACE: the template is read from the \
             build namespace"
                .into(),
        );
    }
    for file in parameter(env, "PULL_SECRETS")
        .into_iter()
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|f| !f.is_empty())
    {
        argv.extend(["--pull-secret".into(), file.into()]);
    }
    Ok(Plugin {
        pipeline: PathBuf::from(parameter(env, "PIPELINE").unwrap_or(".vela.yml")),
        fail_on,
        argv,
    })
}

/// The build's variables the compiler substitutes: every `VELA_*` of the step's
/// environment but those that hold a credential (a name with `TOKEN`, `PASSWORD`,
/// `SECRET` or `KEY`, such as `VELA_NETRC_PASSWORD` and `VELA_ID_TOKEN_REQUEST_TOKEN`),
/// so that no credential can become part of a reported image; an image that reads one
/// stays unresolved.
fn build_variables(env: &HashMap<String, String>) -> HashMap<String, String> {
    env.iter()
        .filter(|(name, _)| {
            name.starts_with("VELA_")
                && !["TOKEN", "PASSWORD", "SECRET", "KEY"]
                    .iter()
                    .any(|word| name.contains(word))
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The warnings not yet printed, on standard error, then the error ([`super::fail`]).
fn fail_after(warnings: &[String], error: &dyn std::fmt::Display) -> i32 {
    for w in warnings {
        eprintln!("warning: {w}");
    }
    super::fail(error)
}

/// Runs the plugin on the process's environment: exit 0 when the step passes, 1 or 3
/// (as `check`) when it fails, 2 for a bad parameter or pipeline.
pub(crate) async fn run() -> i32 {
    let env: HashMap<String, String> = std::env::vars().collect();
    // A parameter that is none of the plugin's is said first: before the rows of the
    // text report (on standard output, ahead of it), and before an error that stops the
    // run (on standard error, ahead of it); in a JSON report it is the first warning.
    let unknown: Vec<String> = unknown_parameters(&env)
        .iter()
        .map(super::render::plugin_warning)
        .collect();
    let plugin = match plugin(&env) {
        Ok(p) => p,
        Err(e) => return fail_after(&unknown, &e),
    };
    let json = plugin.argv.windows(2).any(|w| w == ["--format", "json"]);
    let mut warnings = Vec::new();
    if json {
        warnings.extend(unknown.iter().cloned());
    } else {
        for w in &unknown {
            println!("warning: {w}");
        }
    }
    let pending: &[String] = if json { &unknown } else { &[] };
    let (name, text) = match pullcheck::input::read_file(&plugin.pipeline) {
        Ok(read) => read,
        Err(e) => return fail_after(pending, &format!("PARAMETER_PIPELINE: {e}")),
    };
    let read =
        match pullcheck::input::read_pipeline_read_in_build(&name, &text, &build_variables(&env)) {
            Ok(read) => read,
            Err(e) => return fail_after(pending, &e),
        };
    warnings.extend(read.warnings);
    let uses = read.uses;
    let templates = uses
        .iter()
        .filter(|u| pullcheck_sources::is_template_step(u))
        .count();
    if templates == uses.len() && (templates > 0 || read.inline_templates > 0) {
        // As `check` says it, without a way to pass anyway: the step has nothing to check.
        return fail_after(
            pending,
            &pullcheck_sources::templates_only_message(&name, templates, read.inline_templates),
        );
    }
    if uses.is_empty() {
        return fail_after(
            pending,
            &format!(
                "no image to check in {name} (PARAMETER_PIPELINE): it has no step, service or \
             secret origin with an image"
            ),
        );
    }
    let args = match super::Cli::try_parse_from(&plugin.argv) {
        Ok(super::Cli {
            command: super::Command::Check(args),
            ..
        }) => super::CheckArgs {
            naming: super::render::Naming::Plugin,
            ..*args
        },
        Ok(_) => return fail_after(pending, &"the plugin's parameters did not make a check"),
        Err(e) => return fail_after(pending, &format!("the plugin's parameters: {e}")),
    };
    let code = super::check_uses(args, uses, warnings).await;
    match (plugin.fail_on, code) {
        (FailOn::Missing, pullcheck::report::EXIT_UNVERIFIED) => pullcheck::report::EXIT_OK,
        (_, code) => code,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn parameters_make_the_check_s_command_line() {
        let p = plugin(&env(&[
            ("PARAMETER_NAMESPACE", "ci"),
            ("PARAMETER_PODS_TEMPLATE", "pods"),
            (
                "PARAMETER_PULL_SECRETS",
                "/vela/secrets/a.yaml, /vela/secrets/b.yaml",
            ),
            ("PARAMETER_INCLUDE_ON_START", "false"),
            ("PARAMETER_FAIL_ON", "unverified"),
        ]))
        .expect("valid");
        assert_eq!(p.pipeline, PathBuf::from(".vela.yml"));
        assert_eq!(p.fail_on, FailOn::Unverified);
        assert_eq!(
            p.argv.join(" "),
            "pullcheck check --runtime docker --color never --format text --namespace ci \
             --pods-template pods --pull-secret /vela/secrets/a.yaml --pull-secret \
             /vela/secrets/b.yaml"
        );
        let defaults = plugin(&env(&[("PARAMETER_PIPELINE", "ci/.vela.yml")])).expect("valid");
        assert_eq!(defaults.pipeline, PathBuf::from("ci/.vela.yml"));
        assert_eq!(defaults.fail_on, FailOn::Missing);
        assert!(defaults.argv.contains(&"--include-on-start".to_owned()));
    }

    #[test]
    fn a_bad_parameter_is_named() {
        for (name, value) in [
            ("PARAMETER_FAIL_ON", "sometimes"),
            ("PARAMETER_FORMAT", "yaml"),
            ("PARAMETER_INCLUDE_ON_START", "yes"),
            ("PARAMETER_DEADLINE", "soon"),
            ("PARAMETER_PLATFORM", "linux"),
            ("PARAMETER_PODS_TEMPLATE", "pods"),
        ] {
            let e = plugin(&env(&[(name, value)])).expect_err(name);
            assert!(e.starts_with(name), "{e}");
        }
    }

    #[test]
    fn an_unknown_parameter_is_a_warning_with_the_closest_one() {
        let warnings = unknown_parameters(&env(&[
            ("PARAMETER_NAMESPCE", "ci"),
            ("PARAMETER_NAMESPACE", "ci"),
            ("PARAMETER_COLOUR", "red"),
            ("VELA_BUILD_NUMBER", "7"),
        ]));
        assert_eq!(
            warnings,
            [
                PluginWarning::UnknownParameter {
                    variable: "PARAMETER_COLOUR".into(),
                    closest: None,
                },
                PluginWarning::UnknownParameter {
                    variable: "PARAMETER_NAMESPCE".into(),
                    closest: Some("namespace"),
                },
            ]
        );
        assert!(unknown_parameters(&env(&[("PARAMETER_FAIL_ON", "missing")])).is_empty());
    }

    #[test]
    fn the_naming_is_passed_not_global() {
        use super::super::render::Naming;
        // Both namings in one process, in either order: no process-wide switch.
        assert_eq!(
            option_name(Naming::Plugin, "--namespace"),
            "PARAMETER_NAMESPACE"
        );
        assert_eq!(option_name(Naming::Cli, "--namespace"), "--namespace");
        assert_eq!(
            option_name(Naming::Plugin, "--pull-secret"),
            "PARAMETER_PULL_SECRETS"
        );
        assert_eq!(option_name(Naming::Plugin, "--kubeconfig"), "--kubeconfig");
    }

    #[test]
    fn credentials_are_no_build_variables() {
        let vars = build_variables(&env(&[
            ("VELA_BUILD_NUMBER", "7"),
            ("VELA_NETRC_PASSWORD", "x"),
            ("VELA_ID_TOKEN_REQUEST_TOKEN", "x"),
            ("HOME", "/root"),
        ]));
        assert_eq!(vars.keys().collect::<Vec<_>>(), ["VELA_BUILD_NUMBER"]);
    }
}
