//! The service's words for the library's findings: a row's remedies name what a caller
//! of `POST /v1/checks` can change (a request field such as `include_on_start`) or what
//! the operator of `pullcheck serve` can (its `--ca-file`, `--certs-dir` and
//! `--insecure-registry` options), never a flag of `pullcheck check`.

use pullcheck::mirrors::{Releases, VersionWarning};
use pullcheck::report::{Remedy, Report};
use pullcheck_sources::Setting;

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

/// A row's remedies in the service's words.
pub(crate) fn remedies(remedies: &[Remedy]) -> String {
    remedies
        .iter()
        .map(|r| match r {
            Remedy::TrustCa { host } => format!(
                "the service can trust its CA (serve --ca-file PEM, or --certs-dir DIR with \
                 DIR/{host}/ca.crt)"
            ),
            Remedy::AllowInsecure { host } => {
                format!("allow unverified TLS (serve --insecure-registry {host})")
            }
            Remedy::IncludeOnStart => "check it now with \"include_on_start\": true".to_owned(),
            Remedy::GiveCredential { host } => format!(
                "give a credential for {host} in \"pull_secrets\" (or the service's \
                 --docker-config)"
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

/// The report with every row's other attempts and remedies worded into its detail, for
/// the API's answer.
pub(crate) fn report(mut report: Report) -> Report {
    report.word_attempts();
    report.word_remedies(remedies);
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
            remedies(&[
                Remedy::TrustCa { host: host.clone() },
                Remedy::AllowInsecure { host }
            ]),
            "the service can trust its CA (serve --ca-file PEM, or --certs-dir DIR with \
             DIR/registry.example.com/ca.crt), or allow unverified TLS (serve \
             --insecure-registry registry.example.com)"
        );
        assert_eq!(
            remedies(&[Remedy::IncludeOnStart]),
            "check it now with \"include_on_start\": true"
        );
        assert_eq!(
            remedies(&[Remedy::GiveCredential {
                host: "registry.example.com".into()
            }]),
            "give a credential for registry.example.com in \"pull_secrets\" (or the \
             service's --docker-config)"
        );
    }
}
