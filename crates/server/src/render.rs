//! The service's words for the library's findings: a row's remedies name what a caller
//! of `POST /v1/checks` can change (a request field such as `include_on_start`) or what
//! the operator of `pullcheck serve` can (its `--ca-file`, `--certs-dir` and
//! `--insecure-registry` options), never a flag of `pullcheck check`.

use pullcheck::report::{Remedy, Report};
use pullcheck_sources::Setting;

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
    report
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
