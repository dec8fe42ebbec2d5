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
//! - **Services and secret origins in source** ([`Env::compiled`] false): the compiler
//!   substitutes only steps and stage steps, so these get the worker's pass alone
//!   (go-vela/worker `executor/linux/service.go` and `secret.go` call
//!   `ctn.Substitute()`): a variable set nowhere is empty and its default applies; the
//!   server's variables and secrets are still unknown before the build.
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
    /// In source: whether the compiler substitutes this container (steps and stage
    /// steps); `false` for services and secret origins, which only the worker does.
    pub compiled: bool,
    /// Known values (for source: pipeline, then stage, then step; later wins).
    pub values: HashMap<String, String>,
    /// In source read inside a running build: the server-set variables of that build
    /// (`VELA_BUILD_NUMBER`, …), which the compiler sets over `values`.
    pub build: HashMap<String, String>,
    /// `(target, source)` of the container's secrets.
    pub secrets: Vec<(String, String)>,
    /// Variables set (the step's `parameters:` as `PARAMETER_*`) to a value this
    /// reader does not reproduce, and why ([`ValueSource::Unrendered`],
    /// [`ValueSource::ParameterCase`]).
    pub opaque: Vec<(String, ValueSource)>,
    /// In source: the names of the pipeline's `environment:` that `metadata.environment`
    /// keeps from this container.
    pub withheld: Vec<String>,
}

/// The variables Vela's server sets in every container's environment at compile time,
/// over the pipeline's own values (go-vela/server `compiler/native/environment.go`
/// `environment`, and the `Environment()` of `api/types` `Repo`, `Build` and `User`),
/// with the value when it is the same for every build.
fn server_variable(name: &str) -> Option<Option<&'static str>> {
    const FIXED: [(&str, &str); 3] = [
        ("VELA", "true"),
        ("CI", "true"),
        ("VELA_NETRC_USERNAME", "x-oauth-basic"),
    ];
    /// `environment` itself, and the `Environment()` of `Repo`, `Build` (with the
    /// variables of its event: pull request, tag, deployment) and `User`.
    const PER_BUILD: &[&str] = &[
        "VELA_ADDR",
        "VELA_DATABASE",
        "VELA_DISTRIBUTION",
        "VELA_HOST",
        "VELA_NETRC_MACHINE",
        "VELA_QUEUE",
        "VELA_RUNTIME",
        "VELA_SOURCE",
        "VELA_VERSION",
        "VELA_SERVER_ADDR",
        "VELA_OPEN_ID_ISSUER",
        "VELA_WORKSPACE",
        "VELA_REPO_ACTIVE",
        "VELA_REPO_ALLOW_EVENTS",
        "VELA_REPO_BRANCH",
        "VELA_REPO_TOPICS",
        "VELA_REPO_BUILD_LIMIT",
        "VELA_REPO_CLONE",
        "VELA_REPO_FULL_NAME",
        "VELA_REPO_LINK",
        "VELA_REPO_NAME",
        "VELA_REPO_ORG",
        "VELA_REPO_PRIVATE",
        "VELA_REPO_TIMEOUT",
        "VELA_REPO_TRUSTED",
        "VELA_REPO_VISIBILITY",
        "VELA_REPO_PIPELINE_TYPE",
        "VELA_REPO_APPROVE_BUILD",
        "VELA_REPO_APPROVAL_TIMEOUT",
        "VELA_REPO_OWNER",
        "VELA_REPO_INSTALL_ID",
        "VELA_REPO_CUSTOM_PROPS",
        "REPOSITORY_ACTIVE",
        "REPOSITORY_ALLOW_EVENTS",
        "REPOSITORY_BRANCH",
        "REPOSITORY_CLONE",
        "REPOSITORY_FULL_NAME",
        "REPOSITORY_LINK",
        "REPOSITORY_NAME",
        "REPOSITORY_ORG",
        "REPOSITORY_PRIVATE",
        "REPOSITORY_TIMEOUT",
        "REPOSITORY_TRUSTED",
        "REPOSITORY_VISIBILITY",
        "VELA_BUILD_APPROVED_AT",
        "VELA_BUILD_APPROVED_BY",
        "VELA_BUILD_AUTHOR",
        "VELA_BUILD_AUTHOR_EMAIL",
        "VELA_BUILD_BASE_REF",
        "VELA_BUILD_BRANCH",
        "VELA_BUILD_CLONE",
        "VELA_BUILD_COMMIT",
        "VELA_BUILD_CREATED",
        "VELA_BUILD_DISTRIBUTION",
        "VELA_BUILD_ENQUEUED",
        "VELA_BUILD_EVENT",
        "VELA_BUILD_EVENT_ACTION",
        "VELA_BUILD_HOST",
        "VELA_BUILD_MESSAGE",
        "VELA_BUILD_PARENT",
        "VELA_BUILD_REF",
        "VELA_BUILD_ROUTE",
        "VELA_BUILD_RUNTIME",
        "VELA_BUILD_SENDER",
        "VELA_BUILD_SENDER_SCM_ID",
        "VELA_BUILD_STARTED",
        "VELA_BUILD_SOURCE",
        "VELA_BUILD_STATUS",
        "VELA_BUILD_TITLE",
        "VELA_BUILD_WORKSPACE",
        "VELA_BUILD_NUMBER",
        "VELA_BUILD_LINK",
        "VELA_BUILD_PULL_REQUEST",
        "VELA_BUILD_TARGET",
        "VELA_BUILD_TAG",
        "BUILD_AUTHOR",
        "BUILD_AUTHOR_EMAIL",
        "BUILD_BASE_REF",
        "BUILD_BRANCH",
        "BUILD_CLONE",
        "BUILD_COMMIT",
        "BUILD_CREATED",
        "BUILD_ENQUEUED",
        "BUILD_EVENT",
        "BUILD_HOST",
        "BUILD_MESSAGE",
        "BUILD_PARENT",
        "BUILD_REF",
        "BUILD_SENDER",
        "BUILD_STARTED",
        "BUILD_SOURCE",
        "BUILD_STATUS",
        "BUILD_TITLE",
        "BUILD_WORKSPACE",
        "BUILD_NUMBER",
        "BUILD_LINK",
        "BUILD_PULL_REQUEST_NUMBER",
        "BUILD_TARGET",
        "BUILD_TAG",
        "VELA_PULL_REQUEST",
        "VELA_PULL_REQUEST_SOURCE",
        "VELA_PULL_REQUEST_TARGET",
        "VELA_PULL_REQUEST_FORK",
        "VELA_DEPLOYMENT",
        "VELA_DEPLOYMENT_NUMBER",
        "VELA_USER_ACTIVE",
        "VELA_USER_ADMIN",
        "VELA_USER_FAVORITES",
        "VELA_USER_NAME",
    ];
    if let Some((_, value)) = FIXED.iter().find(|(n, _)| *n == name) {
        return Some(Some(value));
    }
    if PER_BUILD.contains(&name) || name.starts_with("DEPLOYMENT_PARAMETER_") {
        return Some(None);
    }
    None
}

/// The variables the Vela worker sets when a step runs, never the compiler
/// ([`ValueSource::Worker`]): go-vela/worker v0.28.1 `executor/linux/build.go`
/// `UpdateSCMAuth` (lines 972–974, 991–993) and `executor/linux/step.go` (line 122).
/// They hold credentials, so they are unknown even inside a build (the plugin's build
/// variables leave them out).
const WORKER_VARIABLES: [&str; 4] = [
    "VELA_NETRC_PASSWORD",
    "VELA_GIT_TOKEN",
    "VELA_GIT_TOKEN_EXPIRATION",
    "VELA_ID_TOKEN_REQUEST_TOKEN",
];

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

    /// The variables of a step as the compiler's `SubstituteSteps` sees them (its
    /// environment `values`; in a build, the build's server variables `build`).
    pub(crate) fn compile_time(
        values: HashMap<String, String>,
        build: HashMap<String, String>,
    ) -> Env {
        Env {
            mode: Mode::Compile,
            compiled: true,
            values,
            build,
            secrets: Vec::new(),
            opaque: Vec::new(),
            withheld: Vec::new(),
        }
    }

    /// The compiler's lookup ([`Env::lookup`] at compile time): an unknown variable is
    /// `${NAME}`, a value with a line break Go-quoted.
    pub(crate) fn compile_lookup(&self, name: &str) -> String {
        self.lookup(name, Mode::Compile)
    }

    /// The worker's lookup ([`Env::lookup`] at run time): the container's environment,
    /// an unknown variable empty (go-vela/server v0.28.2 `Container.Substitute` looks
    /// each name up in a copy of the container's `Environment`).
    pub(crate) fn worker_lookup(&self, name: &str) -> String {
        self.lookup(name, Mode::Run)
    }

    /// As [`Env::compile_lookup`], but a variable the server sets per build (whose
    /// value the compiler has and pullcheck does not) is a stand-in value without `$`,
    /// `{` or `}`, so that what the worker then parses is shaped as upstream's.
    pub(crate) fn compile_lookup_stand_in(&self, name: &str) -> String {
        self.compile_lookup_probe(name, "0")
    }

    /// As [`Env::compile_lookup`], but a variable the server sets per build is `probe`:
    /// what the compiler computes whatever that value is, when it is the same for two
    /// probes of different lengths.
    pub(crate) fn compile_lookup_probe(&self, name: &str, probe: &str) -> String {
        if !self.build.contains_key(name) && server_variable(name) == Some(None) {
            return probe.to_owned();
        }
        self.lookup(name, Mode::Compile)
    }

    /// Why `name` has no value before the build, or `None` when it has one (or, at run
    /// time, is simply empty).
    fn unknown(&self, name: &str) -> Option<ValueSource> {
        if let Some(source) = self.secret(name) {
            return Some(ValueSource::Secret {
                secret: source.to_owned(),
            });
        }
        if let Some((_, why)) = self.opaque.iter().find(|(n, _)| n == name) {
            return Some(why.clone());
        }
        if self.mode == Mode::Run || self.build.contains_key(name) {
            return None;
        }
        if WORKER_VARIABLES.contains(&name) {
            return Some(ValueSource::Worker);
        }
        match server_variable(name) {
            Some(Some(_)) => return None,
            Some(None) if self.values.contains_key(name) => {
                return Some(ValueSource::ServerOverPipeline);
            }
            Some(None) => return Some(ValueSource::Server),
            None => {}
        }
        if self.values.contains_key(name) {
            return None;
        }
        if name.starts_with("VELA_") {
            Some(ValueSource::Server)
        } else if self.compiled && self.withheld.iter().any(|n| n == name) {
            Some(ValueSource::GlobalEnvironmentWithheld)
        } else if self.compiled {
            Some(ValueSource::Nowhere)
        } else {
            // Only the worker substitutes it: a name set nowhere is empty.
            None
        }
    }

    /// The value upstream's lookup gives `name` in `stage`: the compiler's keeps an
    /// unknown variable as `${NAME}` and quotes a value with a newline; the worker's
    /// gives an unknown variable as empty.
    fn lookup(&self, name: &str, stage: Mode) -> String {
        if self.mode == Mode::Compile {
            if let Some(value) = self.build.get(name) {
                return value.clone();
            }
            if let Some(Some(value)) = server_variable(name) {
                return value.to_owned();
            }
        }
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
            Mode::Compile if !self.compiled => self.pass(text, Mode::Run),
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
        let by_length = template.negative_substring_variables();
        for name in template.variables() {
            let Some(source) = self.unknown(&name) else {
                continue;
            };
            // A variable set nowhere has, for the compiler, the value `${NAME}` itself
            // (its lookup gives the text back): what it computes from that text
            // (`${#NOPE}` is `7`, `${NOPE:1}` `{NOPE}`, `${NOPE:10:-1}` empty) is the
            // result, as drone/envsubst computes it. Only a `${NAME}` that the result
            // still holds is left to the worker, which has no value for it either.
            if stage == Mode::Compile
                && matches!(
                    source,
                    ValueSource::Nowhere | ValueSource::GlobalEnvironmentWithheld
                )
                && !eval(None).is_ok_and(|out| out.contains(&format!("${{{name}}}")))
            {
                continue;
            }
            let reason = UnresolvedVariable {
                default_ignored: stage == Mode::Compile && defaulted.contains(&name),
                name: name.clone(),
                field: Field::Image,
                source,
            };
            // Only a variable whose value changes the result counts.
            let a = eval(Some((&name, "")));
            let b = eval(Some((&name, "\u{1}pullcheck-probe-value")));
            // A negative substring length panics upstream or not by the value's length:
            // unless it panics for every value (both probes do), the result is unknown.
            let by_length =
                by_length.contains(&name) && !(a == Err(SubstError::NegativeLength) && b == a);
            if a != b || by_length {
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
    go_escaped(s, |c| {
        c.is_control().then(|| format!("\\x{:02x}", u32::from(c)))
    })
}

/// `s` double-quoted as Go writes a string (`%q`, encoding/json): `"`, `\`, line feed,
/// carriage return and tab escaped short, any other character as `other` escapes it
/// (`None`: as it is).
pub(crate) fn go_escaped(s: &str, other: impl Fn(char) -> Option<String>) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => match other(c) {
                Some(escaped) => out.push_str(&escaped),
                None => out.push(c),
            },
        }
    }
    out.push('"');
    out
}

/// Whether yaml.v3 writes the step string `text` double-quoted where it asks for a
/// literal block: it has a line break (go.yaml.in/yaml/v3 v3.0.4 `encode.go` lines
/// 350–356) and a space at its end, a space before a line break, or a character it
/// does not print (`emitterc.go` `yaml_emitter_analyze_scalar`, lines 1414–1428, and
/// `yaml_emitter_select_scalar_style`, lines 1066–1069).
pub(crate) fn emitted_double_quoted(text: &str) -> bool {
    text.contains('\n')
        && (text.ends_with(' ')
            || text.contains(" \n")
            || text
                .chars()
                .any(|c| c != '\n' && c != '\t' && c != '\r' && c.is_control()))
}

/// The body (between the quotes) yaml.v3 writes for `text` double-quoted: `\` and `"`
/// escaped, a line break as `\n` (`yaml_emitter_write_double_quoted_scalar`), which
/// is what envsubst then runs over.
pub(crate) fn double_quoted_body(text: &str) -> String {
    let quoted = go_quote(text);
    quoted[1..quoted.len() - 1].to_owned()
}

/// Whether a double-quoted scalar's body decodes again (YAML 1.2 §5.7 escapes, as
/// yaml.v3's scanner takes them): no `"` that is not escaped, and every `\` an escape
/// the scanner knows (`0 a b t n v f r e " / \ N _ L P`, space, tab, `x`/`u`/`U` with
/// their hex digits).
pub(crate) fn double_quoted_decodes(body: &str) -> bool {
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return false,
            '\\' => {
                let digits = match chars.next() {
                    Some(
                        '0' | 'a' | 'b' | 't' | '\t' | 'n' | 'v' | 'f' | 'r' | 'e' | ' ' | '"'
                        | '/' | '\\' | 'N' | '_' | 'L' | 'P' | '\n',
                    ) => 0,
                    Some('x') => 2,
                    Some('u') => 4,
                    Some('U') => 8,
                    _ => return false,
                };
                for _ in 0..digits {
                    if !chars.next().is_some_and(|d| d.is_ascii_hexdigit()) {
                        return false;
                    }
                }
            }
            _ => {}
        }
    }
    true
}

/// Characters that cannot start a plain YAML scalar (libyaml's scanner, which
/// go.yaml.in/yaml/v3 ports); `-`, `?` and `:` only when a blank or the end follows.
const INDICATORS: &str = "-?:,[]{}#&*!|>'\"%@`";

/// Whether yaml.v3's emitter writes `text` as a plain scalar in a block mapping value
/// (its `yaml_emitter_analyze_scalar`): not empty, no leading or trailing blank, no
/// line break, no indicator at the start, no `: ` or ` #` inside and no `:` at the
/// end. (It also quotes a text that would resolve to another type, `true` or `1`,
/// which no image is.)
fn emitted_plain(text: &str) -> bool {
    let blank = |c: char| c == ' ' || c == '\t';
    let Some(first) = text.chars().next() else {
        return false;
    };
    let starts_indicator = INDICATORS.contains(first)
        && !(matches!(first, '-' | '?' | ':')
            && text[1..].chars().next().is_some_and(|c| !blank(c)));
    !(starts_indicator
        || text.starts_with(blank)
        || text.ends_with(blank)
        || text.contains(['\n', '\r'])
        || text.contains(": ")
        || text.contains(":\t")
        || text.contains(" #")
        || text.contains("\t#")
        || text.ends_with(':'))
}

/// What the compiler's `yaml.Unmarshal` reads back from `image: <substituted>` after
/// `SubstituteSteps` put a value into the re-encoded step, when the image as written
/// (`original`) was emitted as a plain scalar: `Ok` with the string it decodes to (a
/// ` #` starts a comment, surrounding blanks are dropped; a text that is only a
/// comment is empty), `Err` when the line no longer decodes into a string (a `: ` or a
/// trailing `:`, or a start that is an indicator: a flow collection, an alias, a
/// quote, a block scalar, ...). An image that was emitted quoted is returned as it is.
/// Only the image's own line is modelled, not what a value with a line break does to
/// the lines after it (the compiler quotes such a value, so it stays on its line).
pub(crate) fn redecode_plain(original: &str, substituted: &str) -> Result<String, ()> {
    if !emitted_plain(original) {
        return Ok(substituted.to_owned());
    }
    let blank = |c: char| c == ' ' || c == '\t';
    let text = substituted.trim_start_matches(blank);
    // A comment: `#` at the start (after the blanks) or after a blank.
    let mut end = text.len();
    for (i, c) in text.char_indices() {
        if c == '#' && (i == 0 || text[..i].ends_with(blank)) {
            end = i;
            break;
        }
    }
    let text = text[..end].trim_end_matches(blank);
    let Some(first) = text.chars().next() else {
        return Ok(String::new());
    };
    if INDICATORS.contains(first)
        && !(matches!(first, '-' | '?' | ':')
            && text[1..].chars().next().is_some_and(|c| !blank(c)))
    {
        return Err(());
    }
    if text.contains(": ") || text.contains(":\t") || text.ends_with(':') {
        return Err(());
    }
    Ok(text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(mode: Mode, values: &[(&str, &str)], secrets: &[(&str, &str)]) -> Env {
        Env {
            mode,
            compiled: true,
            build: HashMap::new(),
            values: values
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            secrets: secrets
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            opaque: Vec::new(),
            withheld: Vec::new(),
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
