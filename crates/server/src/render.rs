//! The service's words for the library's findings: a row's remedies name what a caller
//! of `POST /v1/checks` can change (a request field such as `include_on_start`) or what
//! the operator of `pullcheck serve` can (its CA file, certs directory and insecure
//! registries, [`ServeSetting`]s named by the front end that started it), never a flag
//! of `pullcheck check`; a request's errors name its fields ([`request_error`]).

use axum::http::StatusCode;
use pullcheck::mirrors::{Releases, VersionWarning};
use pullcheck::report::{Remedy, Report};
use pullcheck_sources::{Held, InputKind, NameOf, RequestError, Setting};
use serde_json::{Value, json};

use crate::ServeSetting;
use crate::api::ApiError;

/// A [`VersionWarning`] in words (no option of either front end is named, so the CLI
/// uses these words too): what pullcheck checked, which releases do the same, which
/// decide otherwise and how.
pub fn version_warning(w: &VersionWarning) -> String {
    let modelled = releases(w.modelled());
    let differing = releases(w.differing());
    let runtime = w.runtime();
    match w {
        VersionWarning::HostsTomlWithoutHostTable { file, server } => format!(
            "{} has server = {server} and no [host] table: checked as {runtime} {modelled} \
             read it (asking {server}); {runtime} {differing} reject the file (\"invalid \
             `host` tree\") and pull from the image's own registry instead",
            file.display()
        ),
        VersionWarning::LoopbackDefaultHostOverTls { host, hosts_dir } => {
            let dir = in_dir(hosts_dir.as_deref());
            format!(
                "{host} answered over HTTPS as {runtime}'s default host for a loopback \
                 registry (no server for it{dir}), as {runtime} {modelled} ask it; {runtime} \
                 {differing} ask it over plain HTTP only, which a TLS registry answers with \
                 400 Bad Request"
            )
        }
        VersionWarning::LoopbackDefaultHostOverPlainHttp { host, hosts_dir } => {
            let dir = in_dir(hosts_dir.as_deref());
            format!(
                "{host} answered over plain HTTP as {runtime}'s default host for a loopback \
                 registry (no server for it{dir}), as {runtime} {modelled} ask it; {runtime} \
                 {differing} have no loopback rule there and ask it over HTTPS with \
                 certificate verification only, which a plain-HTTP registry fails"
            )
        }
    }
}

/// ` in DIR` for a hosts directory, nothing without one.
fn in_dir(dir: Option<&std::path::Path>) -> String {
    dir.map(|d| format!(" in {}", d.display()))
        .unwrap_or_default()
}

/// `1.6.0-1.6.39 and 1.7.0-1.7.31`, `1.7.32 and later`.
pub(crate) fn releases(list: &[Releases]) -> String {
    let one = |r: &Releases| match r.last {
        Some(last) => format!("{}-{last}", r.first),
        None => format!("{} and later", r.first),
    };
    let parts: Vec<String> = list.iter().map(one).collect();
    match parts.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// A row's remedies in the service's words, its settings named by `name`.
pub(crate) fn remedies(remedies: &[Remedy], name: fn(ServeSetting) -> &'static str) -> String {
    remedies
        .iter()
        .map(|r| match r {
            Remedy::TrustCa { host } => format!(
                "the service can trust its CA (serve {} PEM, or {} DIR with \
                 DIR/{host}/ca.crt)",
                name(ServeSetting::CaFile),
                name(ServeSetting::CertsDir)
            ),
            Remedy::AllowInsecure { host } => format!(
                "allow unverified TLS (serve {} {host})",
                name(ServeSetting::InsecureRegistry)
            ),
            Remedy::IncludeOnStart => "check it now with \"include_on_start\": true".to_owned(),
            Remedy::GiveCredential { host } => format!(
                "give a credential for {host} in \"pull_secrets\" (or the service's {})",
                name(ServeSetting::DockerConfig)
            ),
        })
        .collect::<Vec<_>>()
        .join(", or ")
}

/// A request setting by its field of `POST /v1/checks`: `"namespace"`, `"platform"`.
pub(crate) fn setting(setting: Setting) -> &'static str {
    match setting {
        Setting::Namespace => "\"namespace\"",
        Setting::Platform => "\"platform\"",
    }
}

/// A [`RequestError`] as `POST /v1/checks` answers it: its status, a message naming the
/// request's fields (`"allow_empty": true`, `pods_template`, `namespace`,
/// `placeholder_image`), and the facts as `error` fields: `kind` (snake_case of the
/// variant), `field` (the request field it is about) and the variant's own
/// (`inputs` of `nothing_to_check`, `reference_error` of `placeholder_image`).
/// `placeholder_given`: the placeholder is the request's, not the service's own
/// (`serve --placeholder-image`, a 500: the caller cannot change it).
pub(crate) fn request_error(error: RequestError, placeholder_given: bool) -> ApiError {
    let with = |mut e: ApiError, facts: Value| {
        if let Value::Object(facts) = facts {
            e.facts = Some(Box::new(facts));
        }
        e
    };
    match error {
        // One text at most: its error, with its position.
        RequestError::Inputs(mut errors) if !errors.is_empty() => {
            with(ApiError::from(errors.remove(0).1), json!({"kind": "input"}))
        }
        RequestError::Inputs(_) => with(
            ApiError::bad("the request's input could not be read"),
            json!({"kind": "input"}),
        ),
        RequestError::NothingToCheck(nothing) => {
            let message = if nothing.inputs.is_empty() {
                "nothing to check: no `pipeline`, `build` or `manifests`, and `images` is \
                 empty (`\"allow_empty\": true` passes anyway)"
                    .to_owned()
            } else {
                format!("{nothing} (`\"allow_empty\": true` passes anyway)")
            };
            let inputs: Vec<Value> = nothing
                .inputs
                .iter()
                .map(|i| {
                    let read_as = match i.read_as {
                        InputKind::Manifests => "manifests",
                        InputKind::Pipeline => "pipeline",
                        InputKind::Build => "build",
                    };
                    match i.held {
                        Held::NoImage => {
                            json!({"name": i.name, "read_as": read_as, "held": "no_image"})
                        }
                        Held::Templates { steps, inline } => json!({
                            "name": i.name, "read_as": read_as, "held": "templates",
                            "template_steps": steps, "inline_templates": inline,
                        }),
                    }
                })
                .collect();
            with(
                ApiError::bad(message),
                json!({"kind": "nothing_to_check", "field": "allow_empty", "inputs": inputs}),
            )
        }
        RequestError::TemplateWithoutNamespace(name) => with(
            ApiError::bad(format!(
                "`pods_template` {name:?} needs `namespace`: the template is read from the \
                 build namespace"
            )),
            json!({"kind": "template_without_namespace", "field": "pods_template"}),
        ),
        RequestError::PlaceholderImage(e) if placeholder_given => with(
            ApiError::bad(format!("`placeholder_image`: {}", e.message())),
            json!({"kind": "placeholder_image", "field": "placeholder_image",
                   "reference_error": e.kind().as_str()}),
        ),
        RequestError::PlaceholderImage(e) => with(
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("the service's placeholder image: {}", e.message()),
            ),
            json!({"kind": "placeholder_image", "reference_error": e.kind().as_str()}),
        ),
        RequestError::Template(e) => with(
            ApiError::new(StatusCode::BAD_GATEWAY, e.to_string()),
            json!({"kind": "template", "field": "pods_template"}),
        ),
        RequestError::Lookup(e) => with(
            ApiError::new(StatusCode::BAD_GATEWAY, e.to_string()),
            json!({"kind": "lookup", "field": "namespace", "lookup": lookup_facts(&e)}),
        ),
        RequestError::PullSecret(e) => with(
            ApiError::new(StatusCode::BAD_GATEWAY, e.to_string()),
            json!({"kind": "pull_secret", "field": "namespace"}),
        ),
        RequestError::LookupDeadline(deadline) => with(
            ApiError::new(
                StatusCode::GATEWAY_TIMEOUT,
                format!(
                    "the Kubernetes lookups of the pull secrets did not finish within the \
                     deadline of {}",
                    pullcheck_sources::format_duration(deadline)
                ),
            ),
            json!({"kind": "lookup_deadline", "field": "deadline_seconds"}),
        ),
        RequestError::InvalidName { of, name, problem } => {
            let field = match of {
                NameOf::Namespace => "namespace",
                NameOf::PodsTemplate => "pods_template",
            };
            with(
                ApiError::bad(format!(
                    "`{field}` {name:?} {problem}: it is one path segment of the Kubernetes API"
                )),
                json!({"kind": "invalid_name", "field": field, "name": name,
                       "problem": problem.as_str()}),
            )
        }
    }
}

/// A failed Kubernetes lookup's facts for the API's error: `error` (what went wrong:
/// `forbidden`, `template_not_found`, `api`, `unreachable`, `unauthorized`, `malformed`,
/// `template_api_missing`, `not_kubernetes`, `config`) and, where the error names them,
/// the object (`resource`, `name`, `namespace`) and the API server's HTTP `code`.
fn lookup_facts(error: &pullcheck_kube::KubeError) -> Value {
    use pullcheck_kube::KubeError as K;
    match error {
        K::Forbidden {
            resource,
            name,
            namespace,
            ..
        } => json!({"error": "forbidden", "resource": resource, "name": name,
                    "namespace": namespace, "code": 403}),
        K::TemplateNotFound { name, namespace } => json!({"error": "template_not_found",
            "resource": "pipelinepodstemplates", "name": name, "namespace": namespace,
            "code": 404}),
        K::Api {
            resource,
            name,
            namespace,
            code,
            ..
        } => json!({"error": "api", "resource": resource, "name": name,
                    "namespace": namespace, "code": code}),
        K::Malformed {
            resource,
            name,
            namespace,
            ..
        } => json!({"error": "malformed", "resource": resource, "name": name,
                    "namespace": namespace}),
        K::Unreachable { .. } => json!({"error": "unreachable"}),
        K::Unauthorized { .. } => json!({"error": "unauthorized", "code": 401}),
        K::TemplateApiMissing { .. } => json!({"error": "template_api_missing", "code": 404}),
        K::NotKubernetes(_) => json!({"error": "not_kubernetes"}),
        K::TemplateFile(_) => json!({"error": "template_file"}),
        _ => json!({"error": "config"}),
    }
}

/// The report with every row's other attempts and remedies worded into its detail, for
/// the API's answer; `name` names the service's settings.
pub(crate) fn report(mut report: Report, name: fn(ServeSetting) -> &'static str) -> Report {
    report.word_attempts();
    report.word_remedies(|r| remedies(r, name));
    report.word_version_warnings(version_warning);
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The golden renderings of the version warnings: a wording change shows here.
    #[test]
    fn version_warnings_golden() {
        assert_eq!(
            version_warning(&VersionWarning::HostsTomlWithoutHostTable {
                file: "/etc/containerd/certs.d/r.example.com/hosts.toml".into(),
                server: "mirror.example.com".into(),
            }),
            "/etc/containerd/certs.d/r.example.com/hosts.toml has server = mirror.example.com \
             and no [host] table: checked as containerd 1.7.32 and later read it (asking \
             mirror.example.com); containerd 1.6.0-1.6.39 and 1.7.0-1.7.31 reject the file \
             (\"invalid `host` tree\") and pull from the image's own registry instead"
        );
        assert_eq!(
            version_warning(&VersionWarning::LoopbackDefaultHostOverTls {
                host: "127.0.0.1:5000".into(),
                hosts_dir: Some("/etc/containerd/certs.d".into()),
            }),
            "127.0.0.1:5000 answered over HTTPS as containerd's default host for a loopback \
             registry (no server for it in /etc/containerd/certs.d), as containerd \
             1.6.25-1.6.39 and 1.7.7 and later ask it; containerd 1.6.9-1.6.24 and \
             1.7.0-1.7.6 ask it over plain HTTP only, which a TLS registry answers with 400 \
             Bad Request"
        );
        assert_eq!(
            version_warning(&VersionWarning::LoopbackDefaultHostOverPlainHttp {
                host: "127.0.0.1:5000".into(),
                hosts_dir: Some("/etc/containerd/certs.d".into()),
            }),
            "127.0.0.1:5000 answered over plain HTTP as containerd's default host for a \
             loopback registry (no server for it in /etc/containerd/certs.d), as containerd \
             1.6.9 and later ask it; containerd 1.6.0-1.6.8 have no loopback rule there and \
             ask it over HTTPS with certificate verification only, which a plain-HTTP \
             registry fails"
        );
    }

    /// The golden renderings of the service's remedies: a wording change shows here.
    #[test]
    fn remedies_golden() {
        let host = "registry.example.com".to_owned();
        assert_eq!(
            remedies(
                &[
                    Remedy::TrustCa { host: host.clone() },
                    Remedy::AllowInsecure { host }
                ],
                crate::plain_setting_name
            ),
            "the service can trust its CA (serve ca_file PEM, or certs_dir DIR with \
             DIR/registry.example.com/ca.crt), or allow unverified TLS (serve \
             insecure_registry registry.example.com)"
        );
        assert_eq!(
            remedies(&[Remedy::IncludeOnStart], crate::plain_setting_name),
            "check it now with \"include_on_start\": true"
        );
        assert_eq!(
            remedies(
                &[Remedy::GiveCredential {
                    host: "registry.example.com".into()
                }],
                crate::plain_setting_name
            ),
            "give a credential for registry.example.com in \"pull_secrets\" (or the \
             service's docker_config)"
        );
    }
}
