//! The CLI's words for the library's findings: remedies and configuration gaps come from
//! the libraries as data ([`Remedy`], [`ConfigGap`]) and are worded here, with this
//! program's flags. No other crate names a flag of the CLI.

use pullcheck::report::{Remedy, Report};
use pullcheck_kube::{ConfigGap, KubeError};
use pullcheck_sources::Setting;

/// A row's remedies in the CLI's words: `trust its CA with --ca-file PEM or --certs-dir
/// DIR (DIR/HOST/ca.crt), or allow unverified TLS with --insecure-registry HOST`.
pub fn remedies(remedies: &[Remedy]) -> String {
    remedies
        .iter()
        .map(|r| match r {
            Remedy::TrustCa { host } => {
                format!("trust its CA with --ca-file PEM or --certs-dir DIR (DIR/{host}/ca.crt)")
            }
            Remedy::AllowInsecure { host } => {
                format!("allow unverified TLS with --insecure-registry {host}")
            }
            Remedy::IncludeOnStart => "check now with --include-on-start".to_owned(),
        })
        .collect::<Vec<_>>()
        .join(", or ")
}

/// A request setting by its flag: `--namespace`, `--platform`.
pub fn setting(setting: Setting) -> &'static str {
    match setting {
        Setting::Namespace => "--namespace",
        Setting::Platform => "--platform",
    }
}

/// The report with every row's other attempts and remedies worded into its detail, for
/// text and JSON.
pub fn report(mut report: Report) -> Report {
    report.word_attempts();
    report.word_remedies(remedies);
    report
}

/// A cluster connection error in the CLI's words: a missing context or kubeconfig names
/// `--context` and `--kubeconfig`.
pub fn kube_error(error: &KubeError) -> String {
    let KubeError::Incomplete(gap) = error else {
        return error.to_string();
    };
    let problem = match gap {
        ConfigGap::NoCurrentContext { kubeconfig } => {
            format!("kubeconfig {kubeconfig}: it sets no current-context; name one (--context)")
        }
        ConfigGap::NoKubeconfigForContext => "a context was given but there is no kubeconfig \
                                              (--kubeconfig, $KUBECONFIG, ~/.kube/config)"
            .to_owned(),
        ConfigGap::NoKubeconfig { in_cluster } => format!(
            "no kubeconfig (--kubeconfig, $KUBECONFIG, ~/.kube/config) and not in a cluster: \
             {in_cluster}"
        ),
    };
    format!("Kubernetes configuration: {problem}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The golden renderings of the CLI's remedies: a wording change shows here.
    #[test]
    fn remedies_golden() {
        let host = "registry.example.com:5000".to_owned();
        assert_eq!(
            remedies(&[
                Remedy::TrustCa { host: host.clone() },
                Remedy::AllowInsecure { host }
            ]),
            "trust its CA with --ca-file PEM or --certs-dir DIR \
             (DIR/registry.example.com:5000/ca.crt), or allow unverified TLS with \
             --insecure-registry registry.example.com:5000"
        );
        assert_eq!(
            remedies(&[Remedy::IncludeOnStart]),
            "check now with --include-on-start"
        );
    }

    #[test]
    fn configuration_gaps_name_the_flags() {
        assert_eq!(
            kube_error(&KubeError::Incomplete(ConfigGap::NoKubeconfigForContext)),
            "Kubernetes configuration: a context was given but there is no kubeconfig \
             (--kubeconfig, $KUBECONFIG, ~/.kube/config)"
        );
        assert_eq!(
            kube_error(&KubeError::Incomplete(ConfigGap::NoCurrentContext {
                kubeconfig: "k.yaml".into()
            })),
            "Kubernetes configuration: kubeconfig k.yaml: it sets no current-context; name one \
             (--context)"
        );
    }
}
