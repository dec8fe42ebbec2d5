//! `--image REF[=POLICY]` arguments.

use crate::policy::ALL_PULL_VALUES;
use crate::{ContainerKind, Disposition, ImageUse, InputError, Origin, PullPolicy};

/// See [`crate::parse_image_arg`].
pub(crate) fn parse(arg: &str) -> Result<ImageUse, InputError> {
    let error = |message: String| InputError {
        file: None,
        line: None,
        column: None,
        message,
        refusal: None,
    };
    // A reference never contains `=`, so the last one separates the policy.
    let (reference, policy) = match arg.rsplit_once('=') {
        Some((reference, policy)) => (reference, policy_of(policy).map_err(error)?),
        None => (arg, PullPolicy::Always),
    };
    if reference.is_empty() {
        return Err(error(format!(
            "no image reference{}; expected REF[=POLICY]",
            if arg.contains('=') {
                " before the policy"
            } else {
                ""
            }
        )));
    }
    Ok(image_use(reference, policy))
}

/// See [`crate::image_use`].
pub(crate) fn image_use(reference: &str, policy: PullPolicy) -> ImageUse {
    ImageUse {
        image: reference.to_owned(),
        substituted: None,
        policy,
        origin: Origin {
            file: None,
            line: None,
            column: None,
            kind: ContainerKind::Image,
            name: reference.to_owned(),
            stage: None,
            pod: None,
        },
        disposition: Disposition::Check,
    }
}

/// A written pull policy as `--image REF=POLICY` takes it: [`PullPolicy::parse`]'s
/// values; an empty or unknown one is an error naming the allowed values.
fn policy_of(written: &str) -> Result<PullPolicy, String> {
    if written.is_empty() {
        return Err(format!("empty pull policy; allowed: {ALL_PULL_VALUES}"));
    }
    PullPolicy::parse(written)
        .ok_or_else(|| format!("unknown pull policy {written:?}; allowed: {ALL_PULL_VALUES}"))
}

/// See [`crate::image_policy_use`].
pub(crate) fn with_policy(reference: &str, written: Option<&str>) -> ImageUse {
    let Some(written) = written else {
        return image_use(reference, PullPolicy::Always);
    };
    match policy_of(written) {
        Ok(policy) => image_use(reference, policy),
        Err(message) => {
            let mut u = image_use(reference, PullPolicy::NotPresent);
            u.disposition = Disposition::UnknownPolicy {
                written: written.to_owned(),
                problems: vec![crate::Problem { at: None, message }],
            };
            u
        }
    }
}

/// See [`crate::image_arg_use`].
pub(crate) fn parse_lenient(arg: &str) -> Result<ImageUse, InputError> {
    match arg.rsplit_once('=') {
        Some((reference, written)) if !reference.is_empty() => {
            Ok(with_policy(reference, Some(written)))
        }
        _ => parse(arg),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_policy_is_always() {
        let u = parse("alpine:3.20").unwrap();
        assert_eq!(u.image, "alpine:3.20");
        assert_eq!(u.policy, PullPolicy::Always);
        assert_eq!(u.disposition, Disposition::Check);
        assert_eq!(u.origin.kind, ContainerKind::Image);
        assert_eq!(u.origin.name, "alpine:3.20");
        assert_eq!(
            (u.origin.file, u.origin.line, u.origin.column),
            (None, None, None)
        );
    }

    #[test]
    fn policy_after_the_last_equals_sign() {
        // The clone image reference from DOMAIN §1: a tag and a digest together.
        let r = "target/vela-git-slim:v0.12.0@sha256:\
                 0000000000000000000000000000000000000000000000000000000000000000";
        for (policy, want) in [
            ("always", PullPolicy::Always),
            ("not_present", PullPolicy::NotPresent),
            ("on_start", PullPolicy::OnStart),
            ("never", PullPolicy::Never),
            ("IfNotPresent", PullPolicy::NotPresent),
            ("Never", PullPolicy::Never),
            ("TRUE", PullPolicy::Always),
            ("false", PullPolicy::NotPresent),
        ] {
            let u = parse(&format!("{r}={policy}")).unwrap();
            assert_eq!(u.image, r);
            assert_eq!(u.policy, want, "{policy}");
        }
        let u = parse("a=b=never").unwrap();
        assert_eq!((u.image.as_str(), u.policy), ("a=b", PullPolicy::Never));
    }

    #[test]
    fn unknown_policy_names_argument_and_allowed_values() {
        let err = parse("alpine=sometimes").unwrap_err();
        assert_eq!(err.file, None);
        // The front end names the argument (its own option); the library names no flag.
        assert!(!err.message.contains("--image"), "{err}");
        assert!(err.message.contains("\"sometimes\""), "{err}");
        assert!(err.message.contains("not_present"), "{err}");
        assert!(err.message.contains("IfNotPresent"), "{err}");
        assert!(parse("alpine=ALWAYS").is_err());
    }

    #[test]
    fn empty_reference_is_an_error() {
        let empty = parse("").unwrap_err().to_string();
        assert!(empty.contains("no image reference;"), "{empty}");
        let only_policy = parse("=always").unwrap_err().to_string();
        assert!(
            only_policy.contains("no image reference before the policy"),
            "{only_policy}"
        );
    }
}

#[cfg(test)]
mod empty_policy_tests {
    #[test]
    fn the_lenient_form_makes_an_unknown_policy_an_invalid_use() {
        let u = super::parse_lenient("alpine=sometimes").unwrap();
        assert_eq!(u.image, "alpine");
        assert!(
            matches!(&u.disposition, crate::Disposition::UnknownPolicy { written, .. } if written == "sometimes")
        );
        assert!(super::parse_lenient("=sometimes").is_err());
        assert!(super::parse_lenient("alpine=never").is_ok());
    }

    #[test]
    fn an_empty_policy_after_equals_is_an_error() {
        let err = super::parse("alpine=").unwrap_err();
        assert!(err.message.contains("empty pull policy"), "{err}");
    }
}
