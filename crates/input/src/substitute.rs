//! Which values a container's `${VAR}`s get, as Vela fills them ([`crate::envsubst`]
//! does the syntax).
//!
//! - **Compiled build** ([`Mode::Run`], the worker's `Container.Substitute`): from the
//!   container's own `environment`; an unknown variable is empty.
//! - **Pipeline source** ([`Mode::Compile`], the compiler's `SubstituteSteps` /
//!   `SubstituteStages`): from the pipeline's `environment:`, the stage's and the
//!   step's own (the step wins); an unknown variable is kept as `${NAME}` (so a default
//!   written for it is dropped), and a value with a newline is inserted quoted (Go's
//!   `%q`). The worker then substitutes the compiled result again from the same
//!   variables, which the compiled container carries: `$${VAR}` becomes `${VAR}` at
//!   compile time and the variable's value at run time.
//!
//! A variable nobody knows before the build makes the result unknown: the `target` of
//! one of the container's `secrets` (the worker injects the secret's value), and in
//! source a `VELA_*` variable the server sets or a variable set nowhere. Only a
//! variable the result really depends on counts (`${A:-${B}}` with `A` set does not
//! depend on `B`).

use std::collections::HashMap;

use crate::envsubst::{SubstError, Template};
use crate::{Field, UnresolvedVariable, ValueSource};

/// Whose substitution to reproduce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// The server's compiler, on pipeline source.
    Compile,
    /// The worker, on a compiled build.
    Run,
}

/// The variables one container sees.
#[derive(Debug, Clone)]
pub(crate) struct Env {
    pub mode: Mode,
    /// Known values (for source: pipeline, then stage, then step; later wins).
    pub values: HashMap<String, String>,
    /// `(target, source)` of the container's secrets.
    pub secrets: Vec<(String, String)>,
}

/// What substituting one field gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The text has nothing to substitute.
    Unchanged,
    /// The text as Vela makes it.
    Substituted(String),
    /// Depends on values known only at build time: each variable and where its value
    /// comes from (the field is [`Field::Image`]; the caller sets it).
    Unresolved(Vec<UnresolvedVariable>),
    /// Upstream's parser refuses the text.
    Error(SubstError),
}

impl Env {
    /// The secret whose `target` is `name`; Vela upper-cases a secret's target
    /// (go-vela/server `StepSecretSlice.UnmarshalYAML`), so `${TAG}` is the secret
    /// written `target: tag`, and `${tag}` is no secret.
    fn secret(&self, name: &str) -> Option<&str> {
        self.secrets
            .iter()
            .find(|(target, _)| target.to_ascii_uppercase() == name)
            .map(|(_, source)| source.as_str())
    }

    /// Why `name` has no value before the build, or `None` when it has one (or, at run
    /// time, is simply empty).
    fn unknown(&self, name: &str) -> Option<ValueSource> {
        if let Some(source) = self.secret(name) {
            return Some(ValueSource::Secret {
                secret: source.to_owned(),
            });
        }
        if self.mode == Mode::Run || self.values.contains_key(name) {
            return None;
        }
        Some(if name.starts_with("VELA_") {
            ValueSource::Server
        } else {
            ValueSource::Nowhere
        })
    }

    /// The value upstream's lookup gives `name` in `stage`: the compiler's keeps an
    /// unknown variable as `${NAME}` and quotes a value with a newline; the worker's
    /// gives an unknown variable as empty.
    fn lookup(&self, name: &str, stage: Mode) -> String {
        match self.values.get(name) {
            Some(v) if stage == Mode::Compile && v.contains('\n') => go_quote(v),
            Some(v) => v.clone(),
            None if stage == Mode::Compile => format!("${{{name}}}"),
            None => String::new(),
        }
    }

    /// Substitutes one field as the build will: for a compiled build, the worker's
    /// pass; for source, the compiler's pass and then the worker's on its result (so
    /// `$${VAR}`, which the compiler turns into `${VAR}`, is filled by the worker from
    /// the same environment, which the compiled container carries).
    pub fn substitute(&self, text: &str) -> Outcome {
        match self.mode {
            Mode::Run => self.pass(text, Mode::Run),
            Mode::Compile => match self.pass(text, Mode::Compile) {
                Outcome::Substituted(compiled) => match self.pass(&compiled, Mode::Run) {
                    Outcome::Unchanged => Outcome::Substituted(compiled),
                    run => run,
                },
                other => other,
            },
        }
    }

    /// One pass of substitution with `stage`'s lookup; a variable without a value
    /// before the build ([`Env::unknown`]) that the result depends on makes it
    /// [`Outcome::Unresolved`].
    fn pass(&self, text: &str, stage: Mode) -> Outcome {
        if !text.contains('$') {
            return Outcome::Unchanged;
        }
        let template = match Template::parse(text) {
            Ok(t) => t,
            Err(e) => return Outcome::Error(e),
        };
        let eval = |fixed: Option<(&str, &str)>| {
            template.eval(&mut |name: &str| match fixed {
                Some((n, v)) if n == name => v.to_owned(),
                _ => self.lookup(name, stage),
            })
        };
        let mut reasons = Vec::new();
        let defaulted = template.defaulted_variables();
        for name in template.variables() {
            let Some(source) = self.unknown(&name) else {
                continue;
            };
            let reason = UnresolvedVariable {
                default_ignored: stage == Mode::Compile && defaulted.contains(&name),
                name: name.clone(),
                field: Field::Image,
                source,
            };
            // Only a variable whose value changes the result counts.
            let a = eval(Some((&name, "")));
            let b = eval(Some((&name, "\u{1}pullcheck-probe-value")));
            if a != b {
                reasons.push(reason);
            }
        }
        if !reasons.is_empty() {
            return Outcome::Unresolved(reasons);
        }
        match eval(None) {
            Ok(out) if out == text => Outcome::Unchanged,
            Ok(out) => Outcome::Substituted(out),
            Err(e) => Outcome::Error(e),
        }
    }
}

/// Go's `%q` of a string: double-quoted, with `\`, `"` and control characters escaped.
fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(mode: Mode, values: &[(&str, &str)], secrets: &[(&str, &str)]) -> Env {
        Env {
            mode,
            values: values
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            secrets: secrets
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        }
    }

    #[test]
    fn run_time_unknown_is_empty_and_secrets_are_unresolved() {
        let e = env(Mode::Run, &[("GO", "1.22")], &[("tag", "image_tag")]);
        assert_eq!(
            e.substitute("golang:${GO}"),
            Outcome::Substituted("golang:1.22".into())
        );
        assert_eq!(
            e.substitute("golang:${NOPE}"),
            Outcome::Substituted("golang:".into())
        );
        assert_eq!(e.substitute("golang:1.22"), Outcome::Unchanged);
        match e.substitute("app:${TAG}") {
            Outcome::Unresolved(r) => assert_eq!(
                (r[0].name.as_str(), &r[0].source),
                (
                    "TAG",
                    &ValueSource::Secret {
                        secret: "image_tag".into()
                    }
                ),
                "{r:?}"
            ),
            other => panic!("{other:?}"),
        }
        // The default hides an empty variable, never a secret.
        assert_eq!(
            e.substitute("a:${X:-1}"),
            Outcome::Substituted("a:1".into())
        );
    }

    #[test]
    fn compile_time_keeps_unknown_and_quotes_newlines() {
        let e = env(Mode::Compile, &[("GO", "1.22"), ("NL", "a\nb")], &[]);
        assert_eq!(
            e.substitute("golang:${GO}"),
            Outcome::Substituted("golang:1.22".into())
        );
        assert_eq!(
            e.substitute("x${NL}"),
            Outcome::Substituted("x\"a\\nb\"".into())
        );
        match e.substitute("golang:${VELA_X}-${NOPE}") {
            Outcome::Unresolved(r) => {
                assert_eq!(
                    r.iter()
                        .map(|v| (v.name.as_str(), &v.source))
                        .collect::<Vec<_>>(),
                    [
                        ("VELA_X", &ValueSource::Server),
                        ("NOPE", &ValueSource::Nowhere)
                    ],
                    "{r:?}"
                );
            }
            other => panic!("{other:?}"),
        }
        // A default of a known variable does not depend on the unknown one inside it.
        assert_eq!(
            e.substitute("golang:${GO:-${NOPE}}"),
            Outcome::Substituted("golang:1.22".into())
        );
        assert_eq!(
            e.substitute("golang:${GO"),
            Outcome::Error(SubstError::MissingClosingBrace)
        );
        assert_eq!(e.substitute("a$$b"), Outcome::Substituted("a$b".into()));
        // `$${GO}` is left to the worker, which fills it from the same environment.
        assert_eq!(
            e.substitute("golang:$${GO}"),
            Outcome::Substituted("golang:1.22".into())
        );
        assert!(matches!(
            e.substitute("golang:$${NOPE}"),
            Outcome::Unresolved(_)
        ));
    }
}
