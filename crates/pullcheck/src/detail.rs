//! The detail renderer: every word the library itself writes into a row's `detail`
//! (and an attempt's). The JSON `detail` is words by contract, rendered from the
//! finding, whose facts travel as data beside it (`reason`, `missing`, `remedies`,
//! `attempts`, ...); this module is the one place those words are made, so a rewording
//! shows here only. It names no CLI flag and no field of a front end: remedies are
//! worded by the front ends' render modules and passed in as text. The registry
//! client's own answer details (`pullcheck_registry::Answer::detail`) are its words,
//! taken as they are; an unresolved image ([`pullcheck_input::Unresolved`]) comes as
//! data and is worded here ([`unresolved`]).

use std::time::Duration;

use pullcheck_credentials::{CredentialError, ProviderError};
use pullcheck_registry::CertificateProblem;

use crate::report::{AttemptReport, ImageReport, Remedy, Status};

/// A use under pull policy `never`.
pub(crate) const NEVER_PULLED: &str = "pull policy `never`: the image is not pulled";

/// A use under pull policy `on_start`, not checked now.
pub(crate) const DEFERRED_ON_START: &str =
    "pull policy `on_start`: pulled when its container starts";

/// A checked reference that has no outcome (no endpoint was resolved for it).
pub(crate) const NO_ENDPOINT_RESOLVED: &str = "no endpoint resolved for this reference";

/// A reference with routes but no (route, credential) attempt to make.
pub(crate) const NO_ENDPOINT_TO_ASK: &str = "no endpoint to ask";

/// The words for a skipped use ([`pullcheck_input::Skip`]).
pub(crate) fn skip(skip: &pullcheck_input::Skip) -> String {
    match skip {
        pullcheck_input::Skip::Template { name } => format!(
            "not checked: uses template {name}; its images are known only after the server \
             expands the template"
        ),
        pullcheck_input::Skip::Init => {
            "not checked: `#init` is the init step Vela injects, not an image".to_owned()
        }
        pullcheck_input::Skip::Exempt => "exempt".to_owned(),
    }
}

/// The sentence for one variable an image waits for, e.g. ``${TAG} is the target of
/// secret `tag`, whose value the worker injects at build time``; `` `pull`: `` first
/// when it is in the `pull:` field.
pub(crate) fn variable(v: &pullcheck_input::UnresolvedVariable) -> String {
    use pullcheck_input::{Field, ValueSource};
    let name = &v.name;
    let field = if v.field == Field::Pull {
        "`pull`: "
    } else {
        ""
    };
    let source = match &v.source {
        ValueSource::Secret { secret } => format!(
            "${{{name}}} is the target of secret `{secret}`, whose value the worker injects \
             at build time"
        ),
        ValueSource::Server => {
            format!("${{{name}}} is set by the Vela server when it compiles the build")
        }
        ValueSource::ServerOverPipeline => format!(
            "${{{name}}} is set by the Vela server when it compiles the build, over the \
             value the pipeline gives it"
        ),
        ValueSource::Unrendered { what } => {
            format!("${{{name}}} is {what}, which pullcheck does not render as Vela does")
        }
        ValueSource::GlobalEnvironmentWithheld => format!(
            "${{{name}}} is set in the pipeline's `environment:`, which \
             `metadata.environment` does not give to this container"
        ),
        ValueSource::Worker => format!(
            "${{{name}}} is set by the Vela worker when the step runs (a credential, which \
             pullcheck never substitutes)"
        ),
        // The compiler leaves an unknown `${NAME}` (and turns `$${NAME}` into it); the
        // worker then fills it from the container's environment, empty when unset
        // (go-vela/worker's substitution). "Set nowhere ... the server sets it" said two
        // things at once; this says who fills it.
        ValueSource::Nowhere => format!(
            "${{{name}}} is not set in the pipeline: the worker fills it from the step's \
             environment when the step runs (a secret, or a variable the server sets), and \
             makes it empty if nothing sets it"
        ),
    };
    let default = if v.default_ignored {
        format!(
            " (its default is never used: the compiler keeps an unknown variable as \
             ${{{name}}} and drops the default, and the worker makes it empty if nothing \
             sets it)"
        )
    } else {
        String::new()
    };
    format!("{field}{source}{default}")
}

/// An unresolved image's words without the position: `not checked: image
/// "app:${TAG}" is known only when the build runs: ...` (each [`variable`]'s sentence,
/// joined by `; `).
pub(crate) fn unresolved_message(u: &pullcheck_input::Unresolved) -> String {
    format!(
        "not checked: image {:?} is known only when the build runs: {}",
        u.image,
        u.variables
            .iter()
            .map(variable)
            .collect::<Vec<_>>()
            .join("; ")
    )
}

/// An unresolved image's detail: `FILE:LINE:COLUMN: ` ([`pullcheck_input::Position`])
/// and [`unresolved_message`]; the message alone in a compiled build (no position).
pub(crate) fn unresolved(u: &pullcheck_input::Unresolved) -> String {
    match &u.at {
        Some(at) => format!("{at}: {}", unresolved_message(u)),
        None => unresolved_message(u),
    }
}

/// Credential helpers or plugins still running when the overall deadline (`deadline`)
/// ran out.
pub(crate) fn helpers_out_of_time(deadline: Duration) -> String {
    format!(
        "credential helpers did not answer within the overall deadline of {} ms",
        deadline.as_millis()
    )
}

/// The credentials of a reference could not be resolved (a helper or file failed).
pub(crate) fn not_checked(error: &CredentialError) -> String {
    format!("not checked: {error}")
}

/// The mirror configuration's `rule` blocks the reference.
pub(crate) fn blocked(rule: &str) -> String {
    format!("blocked by {rule}; no request was sent")
}

/// The mirror configuration's `rule` makes the reference unpullable, for `reason`.
pub(crate) fn unpullable(reason: &str, rule: &str) -> String {
    format!("the runtime cannot pull this: {reason} ({rule}); no request was sent")
}

/// No answer from `host`: within the overall `deadline` when it ran out (`Some`), else
/// the check ended before it was asked.
pub(crate) fn no_answer(host: &str, deadline: Option<Duration>) -> String {
    match deadline {
        Some(d) => format!(
            "no answer within the overall deadline of {} ms from {host}",
            d.as_millis()
        ),
        None => format!("no answer from {host}"),
    }
}

/// `detail` with the credential provider plugins that failed: after it when the answer
/// stands (`answered`), else before it as the reason the credential was not tried.
pub(crate) fn provider_failures(
    detail: &str,
    failures: &[ProviderError],
    answered: bool,
) -> String {
    let words: Vec<String> = failures
        .iter()
        .map(|f| format!("credential provider {} failed: {}", f.provider, f.failure))
        .collect();
    if answered {
        format!("{detail}; {}", words.join("; "))
    } else {
        format!("{}, so it was not tried; {detail}", words.join("; "))
    }
}

/// A registry (`host`) whose https certificate is not valid for it, for `problem`.
pub(crate) fn untrusted(host: &str, problem: CertificateProblem) -> String {
    let problem = match problem {
        CertificateProblem::UnknownAuthority => "signed by an unknown authority",
        CertificateProblem::Expired => "expired",
        CertificateProblem::NotYetValid => "not yet valid",
        CertificateProblem::OtherHost => "issued for another host",
        CertificateProblem::Revoked => "revoked",
        CertificateProblem::BadSignature => "badly signed",
        CertificateProblem::Invalid => "invalid",
    };
    format!(
        "https certificate of registry {host} not trusted: {problem}; the registry as \
         reached cannot be shown to be the one named"
    )
}

/// `detail` of an https certificate not valid for its host, where the registry client
/// gave no [`CertificateProblem`] (a token server's): its words, then why it is denied.
pub(crate) fn untrusted_as_said(detail: &str) -> String {
    format!("{detail}; the registry as reached cannot be shown to be the one named")
}

/// `detail` of an answer from the answer cache, `age` old.
pub(crate) fn cached(detail: &str, age: Duration) -> String {
    format!("{detail} (answer cached {} s ago)", age.as_secs())
}

/// `detail` with a front end's words for its `remedies` (`text`, not empty): `detail
/// (text)` when the only remedy is [`Remedy::IncludeOnStart`], else `detail; text`.
pub(crate) fn with_remedies(detail: &str, remedies: &[Remedy], text: &str) -> String {
    if remedies == [Remedy::IncludeOnStart] {
        format!("{detail} ({text})")
    } else {
        format!("{detail}; {text}")
    }
}

/// The other attempts of `image` in words, for [`Report::word_attempts`](crate::report::Report::word_attempts); `None` when
/// there are none. Attempts are the same answer when their facts are equal (status,
/// reason, what is missing, close tags, platforms, retry after), whatever their details
/// say: a detail names its host, so two endpoints that answer alike differ in words.
/// A group of other answers is worded with its first attempt's detail.
pub(crate) fn attempts(image: &ImageReport) -> Option<String> {
    let chosen = image.attempts.iter().find(|a| a.chosen)?;
    // The answer's facts → the endpoints that answered so, in first-seen order.
    let mut groups: Vec<(&AttemptReport, Vec<String>)> = Vec::new();
    for a in image.attempts.iter().filter(|a| !a.chosen) {
        let name = match &a.credential {
            Some(c) => format!("{} with {} key {:?}", a.endpoint, c.source, c.key),
            None => a.endpoint.clone(),
        };
        match groups.iter_mut().find(|(first, _)| same_answer(first, a)) {
            Some((_, names)) => names.push(name),
            None => groups.push((a, vec![name])),
        }
    }
    if groups.is_empty() {
        return None;
    }
    let verb = if matches!(chosen.status, Status::Present | Status::Unrunnable) {
        "after"
    } else {
        "also tried"
    };
    let listed: Vec<String> = groups
        .into_iter()
        .map(|(first, names)| {
            let names = names.join(", ");
            if same_answer(first, chosen) {
                format!("{names}: same answer")
            } else {
                format!("{names}: {} ({})", first.status.as_str(), first.detail)
            }
        })
        .collect();
    Some(format!("{verb}: {}", listed.join("; ")))
}

/// Whether two attempts got the same answer: equal status, reason, missing part, close
/// tags, platforms and retry after (not their details, which name their hosts).
fn same_answer(a: &AttemptReport, b: &AttemptReport) -> bool {
    (
        a.status,
        a.reason,
        a.missing,
        &a.close_tags,
        &a.platforms,
        a.retry_after,
    ) == (
        b.status,
        b.reason,
        b.missing,
        &b.close_tags,
        &b.platforms,
        b.retry_after,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words of an unresolved image, once (the golden rendering), through the real
    /// reader: `${X}` set nowhere, and `$${X}`, which the compiler turns into `${X}`
    /// for the worker, get the same sentence, which says who fills it (it said "set
    /// nowhere ...; the server or a secret sets it").
    #[test]
    fn unresolved_words_golden() {
        let text = "version: \"1\"\nsteps:\n  - name: a\n    image: golang:${GO_VERSION}\n    \
                    commands: [x]\n  - name: b\n    image: golang:$${GO_VERSION}\n    \
                    commands: [x]\n";
        let uses = pullcheck_input::read_pipeline_with_warnings(".vela.yml", text)
            .expect("reads")
            .0;
        let words: Vec<String> = uses
            .iter()
            .map(|u| match &u.disposition {
                pullcheck_input::Disposition::Unresolved(un) => unresolved(un),
                other => panic!("{other:?}"),
            })
            .collect();
        let who = "${GO_VERSION} is not set in the pipeline: the worker fills it from the \
                   step's environment when the step runs (a secret, or a variable the server \
                   sets), and makes it empty if nothing sets it";
        assert_eq!(
            words,
            [
                format!(
                    ".vela.yml:4:12: not checked: image \"golang:${{GO_VERSION}}\" is known \
                     only when the build runs: {who}"
                ),
                format!(
                    ".vela.yml:7:12: not checked: image \"golang:$${{GO_VERSION}}\" is known \
                     only when the build runs: {who}"
                ),
            ]
        );
    }
}
