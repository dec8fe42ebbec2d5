//! Pull policies: Vela's `pull:` values, their normalisation, and the Kubernetes names.

use std::fmt;

/// A pull policy, in Vela's terms (which map onto Kubernetes' `imagePullPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PullPolicy {
    /// Vela `always` / Kubernetes `Always`.
    Always,
    /// Vela `not_present` / Kubernetes `IfNotPresent`.
    NotPresent,
    /// Vela `on_start`: pulled when the step starts, not at build start.
    OnStart,
    /// Vela `never` / Kubernetes `Never`.
    Never,
}

/// The allowed values of a Vela `pull:`, for error messages.
pub const VELA_PULL_VALUES: &str = "always, not_present, on_start, never \
     (true and false are read as always and not_present; empty means not_present)";

/// The values [`PullPolicy::parse`] accepts, for error messages.
pub const ALL_PULL_VALUES: &str = "always, not_present, on_start, never, true, false, \
     or Kubernetes' Always, IfNotPresent, Never";

impl PullPolicy {
    /// The Vela spelling: `always`, `not_present`, `on_start`, `never`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Always => "always",
            Self::NotPresent => "not_present",
            Self::OnStart => "on_start",
            Self::Never => "never",
        }
    }

    /// The Kubernetes `imagePullPolicy` the Vela Kubernetes runtime gives the container:
    /// `on_start` becomes `Always`, since the real image is patched in when the step starts
    /// and pulled then (DOMAIN §1, "Pull policy mapping").
    pub fn kubernetes(self) -> &'static str {
        match self {
            Self::Always | Self::OnStart => "Always",
            Self::NotPresent => "IfNotPresent",
            Self::Never => "Never",
        }
    }

    /// Parses a policy as Vela normalises `pull:` (empty → `not_present`, `true`/`false`
    /// in any case → `always`/`not_present`), and also Kubernetes' `Always`, `IfNotPresent`,
    /// `Never`. `None` for anything else.
    ///
    /// The Vela values are lower case only, as upstream compares them exactly; the Kubernetes
    /// names are case-sensitive, as Kubernetes validates them. So `Always` is accepted (the
    /// Kubernetes name) but `ALWAYS` is not.
    pub fn parse(value: &str) -> Option<PullPolicy> {
        Self::from_vela(value).or(match value {
            "Always" => Some(Self::Always),
            "IfNotPresent" => Some(Self::NotPresent),
            "Never" => Some(Self::Never),
            _ => None,
        })
    }

    /// Parses a Vela `pull:` value only, as upstream's YAML reader normalises it
    /// (go-vela/server `compiler/types/yaml`, the container unmarshalling): empty →
    /// `not_present`; `true` in any case → `always`; `false` in any case → `not_present`;
    /// then exactly `always`, `not_present`, `on_start` or `never`. `None` for anything
    /// else (upstream passes such a value through and the worker treats it as
    /// `IfNotPresent`; we reject it instead).
    ///
    /// Kubernetes names are *not* accepted here: in a pipeline, Vela would not understand
    /// `Never` and would pull with `IfNotPresent`.
    pub fn from_vela(value: &str) -> Option<PullPolicy> {
        if value.is_empty() || value.eq_ignore_ascii_case("false") {
            return Some(Self::NotPresent);
        }
        if value.eq_ignore_ascii_case("true") {
            return Some(Self::Always);
        }
        match value {
            "always" => Some(Self::Always),
            "not_present" => Some(Self::NotPresent),
            "on_start" => Some(Self::OnStart),
            "never" => Some(Self::Never),
            _ => None,
        }
    }
}

impl fmt::Display for PullPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::PullPolicy::{self, *};

    #[test]
    fn vela_values_and_booleans_normalise() {
        for (value, want) in [
            ("", NotPresent),
            ("true", Always),
            ("TRUE", Always),
            ("True", Always),
            ("tRuE", Always),
            ("false", NotPresent),
            ("False", NotPresent),
            ("FALSE", NotPresent),
            ("always", Always),
            ("not_present", NotPresent),
            ("on_start", OnStart),
            ("never", Never),
        ] {
            assert_eq!(PullPolicy::from_vela(value), Some(want), "{value:?}");
            assert_eq!(PullPolicy::parse(value), Some(want), "{value:?}");
        }
    }

    #[test]
    fn kubernetes_names_only_in_parse_and_case_sensitive() {
        assert_eq!(PullPolicy::parse("Always"), Some(Always));
        assert_eq!(PullPolicy::parse("IfNotPresent"), Some(NotPresent));
        assert_eq!(PullPolicy::parse("Never"), Some(Never));
        for k8s in ["Always", "IfNotPresent", "Never"] {
            assert_eq!(PullPolicy::from_vela(k8s), None, "{k8s}");
        }
        for bad in [
            "ALWAYS",
            "ifnotpresent",
            "NEVER",
            "IFNOTPRESENT",
            "Not_Present",
        ] {
            assert_eq!(PullPolicy::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn unknown_values_are_rejected() {
        // `sometimes` is the value of upstream's schema test
        // server/schema/testdata/pipeline/fail/invalid_pull.yml.
        for bad in [
            "sometimes",
            "yes",
            "no",
            "1",
            "0",
            " always",
            "always ",
            "build_start",
        ] {
            assert_eq!(PullPolicy::parse(bad), None, "{bad}");
            assert_eq!(PullPolicy::from_vela(bad), None, "{bad}");
        }
    }

    #[test]
    fn as_str_round_trips_and_maps_to_kubernetes() {
        for p in [Always, NotPresent, OnStart, Never] {
            assert_eq!(PullPolicy::parse(p.as_str()), Some(p));
            assert_eq!(p.to_string(), p.as_str());
        }
        assert_eq!(OnStart.kubernetes(), "Always");
        assert_eq!(NotPresent.kubernetes(), "IfNotPresent");
        assert_eq!(Never.kubernetes(), "Never");
        assert_eq!(Always.kubernetes(), "Always");
    }
}
