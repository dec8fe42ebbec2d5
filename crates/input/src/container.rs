//! One container (step, service or secret origin) → one [`ImageUse`].
//!
//! Shared by both pipeline layouts: a source step and a compiled `Container` carry their
//! image, pull policy and name under the same keys.
//!
//! Nodes are [`Reached`] from the document's root, so that positions say where a value is
//! used: a value reached through an alias is at that alias (`image: *img`, `- *stepa`,
//! `<<: *defaults`), and a message about it names where it is written too (see
//! [`crate::yaml`]).

use std::collections::HashMap;

use crate::policy::VELA_PULL_VALUES;
use crate::resolve::{Resolved, resolve_node};
use crate::substitute::{Env, Mode, Outcome};
use crate::tree::{BUDGET, Budget, Doc, LookupError, Pos, Reached};
use crate::yaml::Value;

/// The keys of a source step, as go-vela/server's `compiler/types/yaml` `Step` reads them.
pub(crate) const STEP_KEYS: &[&str] = &[
    "ruleset",
    "commands",
    "entrypoint",
    "secrets",
    "template",
    "artifacts",
    "ulimits",
    "volumes",
    "image",
    "name",
    "pull",
    "environment",
    "parameters",
    "detach",
    "privileged",
    "user",
    "report_as",
    "id_request",
    "git",
];

/// The keys of a source service (`compiler/types/yaml` `Service`).
const SERVICE_KEYS: &[&str] = &[
    "image",
    "name",
    "entrypoint",
    "environment",
    "ports",
    "pull",
    "ulimits",
    "user",
    "ruleset",
];

/// The keys of a secret's `origin` (`compiler/types/yaml` `Origin`).
const ORIGIN_KEYS: &[&str] = &[
    "environment",
    "image",
    "name",
    "parameters",
    "secrets",
    "pull",
    "ruleset",
    "id_request",
];

/// What the worker does with a container whose string envsubst fails on with `e`:
/// go-vela/worker v0.28.1 fails the container ("unable to substitute container
/// configuration") on a parse error, but a negative substring length panics in
/// drone/envsubst v1.0.3's `toSubstr` (a slice out of range), which the worker does
/// not recover from.
fn worker_failure(kind: ContainerKind, e: crate::envsubst::SubstError) -> String {
    let what = match kind {
        ContainerKind::Service => "service",
        ContainerKind::Secret => "secret origin",
        _ => "step",
    };
    if e == crate::envsubst::SubstError::NegativeLength {
        format!("the worker panics substituting the {what}, so the build never runs it")
    } else {
        format!("the worker fails the {what} with \"unable to substitute container configuration\"")
    }
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (diagonal + usize::from(ca != cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// The known key closest to `key` (compared lower-cased; `known` are lower case), when
/// it is near enough to be a misspelling of it (at most 2 edits, and fewer than the
/// key's length).
pub fn closest_key(key: &str, known: &[&'static str]) -> Option<&'static str> {
    let lower = key.to_lowercase();
    known
        .iter()
        .map(|k| (edit_distance(&lower, k), *k))
        .filter(|&(d, _)| d <= 2 && d < key.chars().count())
        .min_by_key(|&(d, _)| d)
        .map(|(_, k)| k)
}
use crate::{
    ContainerKind, Disposition, Field, ImageUse, InputError, LineColumn, Origin, Position, Problem,
    PullPolicy, Skip, Unresolved, ValueSource,
};

/// A scalar as yaml.v3 marshals it and reads it back into a `string` (`unmarshalSlice`):
/// a string as it is, a boolean `true`/`false`, an integer in decimal, a float as
/// yaml.v3's encoder writes it (`FormatFloat(v, 'g', -1, 64)`, `.inf`, `-.inf`,
/// `.nan`); a timestamp is not reproduced.
fn yaml_v3_marshalled(r: Resolved, text: &str) -> Result<String, String> {
    match r {
        Resolved::Str | Resolved::Merge => Ok(text.to_owned()),
        Resolved::Bool => Ok(text.to_ascii_lowercase()),
        Resolved::Int(i) => Ok(i.to_string()),
        Resolved::Uint(u) => Ok(u.to_string()),
        Resolved::Float(f) if f.is_nan() => Ok(".nan".to_owned()),
        Resolved::Float(f) if f.is_infinite() => {
            Ok(if f > 0.0 { ".inf" } else { "-.inf" }.to_owned())
        }
        Resolved::Float(f) => Ok(go_format_g(f)),
        Resolved::Null => Ok(String::new()),
        Resolved::Timestamp => Err(format!("the timestamp {text:?}")),
    }
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)`: the shortest digits, in `%e` form
/// (`1e+06`, `1.5e-07`) when the exponent is below -4 or at least 6 (the shortest
/// form's precision is taken as 6), else plain (`1000`, `0.0001`); `+Inf`, `-Inf`, `NaN`.
fn go_format_g(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_owned();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    let e = format!("{f:e}");
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        format!("{f}")
    }
}

/// Go's encoding/json of a finite float64: plain shortest digits, or `%e` (`1e+21`,
/// `1e-7`) below 1e-6 or from 1e21 on.
fn go_json_float(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let e = format!("{f:e}");
        match e.split_once('e') {
            Some((m, exp)) if !exp.starts_with('-') => format!("{m}e+{exp}"),
            _ => e,
        }
    } else {
        format!("{f}")
    }
}

/// Go's encoding/json of a string: `"`, `\`, `\n`, `\r`, `\t` escaped short, other
/// control characters and `<`, `>`, `&`, U+2028, U+2029 as `\u00XX` (HTML-safe, as
/// `json.Marshal` does).
fn go_json_string(s: &str) -> String {
    crate::substitute::go_escaped(s, |c| {
        ((c as u32) < 0x20 || matches!(c, '<' | '>' | '&' | '\u{2028}' | '\u{2029}'))
            .then(|| format!("\\u{:04x}", c as u32))
    })
}

/// The image Vela gives its injected init step; not an image at all.
pub(crate) const INIT_IMAGE: &str = "#init";

/// Where a container sits, for its [`Origin`].
pub(crate) struct Place {
    pub kind: ContainerKind,
    /// The name when the container has none, e.g. `steps[2]`.
    pub fallback_name: String,
    pub stage: Option<String>,
    /// For a secret origin without a name: the secret's name.
    pub secret_name: Option<String>,
    /// In source: the variables of the pipeline's and the stage's `environment:`, which
    /// the compiler merges into the step's before substituting.
    pub scope_env: HashMap<String, String>,
    /// In source: the names of the pipeline's `environment:` that `metadata.environment`
    /// keeps from this kind of container.
    pub withheld: Vec<String>,
}

/// Walks one document, collecting image uses; every lookup spends from one budget.
pub(crate) struct Reader<'a> {
    pub doc: &'a Doc,
    pub file: &'a str,
    budget: Budget,
    pub out: Vec<ImageUse>,
    /// Whose `${VAR}` substitution to reproduce: the worker's for a compiled build, the
    /// compiler's for source.
    pub mode: Mode,
    /// Warnings about what the document holds (misspelt container keys).
    pub warnings: Vec<String>,
    /// Whether the server expands a step's `template:`: only when the pipeline has
    /// `templates:` (go-vela/server `ExpandSteps` returns at once without them, and
    /// the step runs as it is written).
    pub expands_templates: bool,
    /// The server-set variables of a running build, known to a plugin step (empty
    /// otherwise); in source they win over the pipeline's own values.
    pub build_env: HashMap<String, String>,
}

impl<'a> Reader<'a> {
    pub fn new(doc: &'a Doc, file: &'a str) -> Reader<'a> {
        Reader {
            doc,
            file,
            budget: Budget::new(BUDGET),
            out: Vec::new(),
            mode: Mode::Compile,
            warnings: Vec::new(),
            expands_templates: true,
            build_env: HashMap::new(),
        }
    }

    /// Where the node is used (file, line and column; the line and column unknown for a
    /// node without a position), and where it is written when that is elsewhere (it was
    /// reached through an alias).
    pub fn loc(&self, node: Reached) -> Position {
        let used = self.pos(node);
        Position {
            file: self.file.to_owned(),
            line: used.map(|p| p.line),
            column: used.map(|p| p.column),
            written: match self.doc.written_pos(node.id) {
                Some(w) if used != Some(w) => Some(LineColumn {
                    line: w.line,
                    column: w.column,
                }),
                _ => None,
            },
        }
    }

    /// A problem of a container at `node`. In a compiled build the position is left out:
    /// it is a place in a machine's encoding of the build (the Go package's JSON, the
    /// service's re-serialised `build`), which no Vela user wrote; the row's origin, and
    /// the message ([`Reader::whose`]), name the container instead.
    pub fn problem(&self, node: Reached, message: impl Into<String>) -> Problem {
        match self.mode {
            Mode::Compile => Problem::at(self.loc(node), message),
            Mode::Run => Problem {
                at: None,
                message: message.into(),
            },
        }
    }

    /// In a compiled build, `step `name`` (with ` (stage `s`)`) followed by `: `, to
    /// start a message that does not name its container otherwise; in source, where the
    /// position says where, nothing.
    fn whose(&self, what: &str, name: &str, place: &Place) -> String {
        match (self.mode, &place.stage) {
            (Mode::Compile, _) => String::new(),
            (Mode::Run, Some(stage)) => format!("{what} `{name}` (stage `{stage}`): "),
            (Mode::Run, None) => format!("{what} `{name}`: "),
        }
    }

    /// ` (written at line:column)` when the node is written elsewhere than it is used (it
    /// was reached through an alias), else nothing.
    fn written_note(&self, node: Reached) -> String {
        match self.doc.written_pos(node.id) {
            Some(w) if self.pos(node) != Some(w) => {
                format!(" (written at {}:{})", w.line, w.column)
            }
            _ => String::new(),
        }
    }

    /// Where the node is used.
    pub fn pos(&self, node: Reached) -> Option<Pos> {
        self.doc.used_pos(node)
    }

    pub fn error(&self, pos: Option<Pos>, message: String) -> InputError {
        InputError {
            file: Some(self.file.to_owned()),
            line: pos.map(|p| p.line),
            column: pos.map(|p| p.column),
            message,
            refusal: None,
        }
    }

    /// An error about `node`: where it is used, naming where it is written when that is
    /// elsewhere.
    pub fn error_at(&self, node: Reached, message: String) -> InputError {
        self.error(self.pos(node), message + &self.written_note(node))
    }

    fn lookup_error(&self, e: LookupError) -> InputError {
        match e {
            LookupError::Exhausted => self.error(
                None,
                format!(
                    "too many alias and merge-key expansions (more than {BUDGET} mapping \
                     entries looked at); refusing a possible alias bomb"
                ),
            ),
            LookupError::BadMerge(pos) => self.error(
                pos,
                "a merge key `<<` needs a mapping or a list of mappings as its value".to_owned(),
            ),
        }
    }

    /// The value of `key` in mapping `map`, merge keys included; `None` when absent or
    /// when `map` is not a mapping.
    pub fn get(&mut self, map: Reached, key: &str) -> Result<Option<Reached>, InputError> {
        self.doc
            .get(map, key, &self.budget)
            .map_err(|e| self.lookup_error(e))
    }

    /// The value of `key`, treating an explicit null like an absent key.
    pub fn get_set(&mut self, map: Reached, key: &str) -> Result<Option<Reached>, InputError> {
        Ok(self.get(map, key)?.filter(|v| !self.doc.is_null(v.id)))
    }

    /// The string entries of a mapping, merge keys resolved, in file order.
    pub fn entries(&mut self, map: Reached) -> Result<Vec<(String, Reached)>, InputError> {
        self.doc
            .entries(map, &self.budget)
            .map_err(|e| self.lookup_error(e))
    }

    /// The items of the list under `key` (empty when absent or null). Anything else than a
    /// list is not a pipeline upstream could decode: an [`InputError`] at the value.
    pub fn list(
        &mut self,
        map: Reached,
        key: &str,
        what: &str,
    ) -> Result<Vec<Reached>, InputError> {
        let Some(node) = self.get_set(map, key)? else {
            return Ok(Vec::new());
        };
        match self.doc.items(node.id) {
            Some(items) => {
                self.budget
                    .spend(items.len())
                    .map_err(|e| self.lookup_error(e))?;
                Ok(items
                    .iter()
                    .map(|&item| self.doc.reach(node, None, item))
                    .collect())
            }
            None => Err(self.error_at(
                node,
                format!(
                    "`{what}` must be a list, found a {}",
                    self.doc.kind_name(node.id)
                ),
            )),
        }
    }

    /// A non-empty string value of `key`.
    pub fn text(&mut self, map: Reached, key: &str) -> Result<Option<String>, InputError> {
        Ok(self
            .get(map, key)?
            .and_then(|v| self.doc.text(v.id))
            .filter(|t| !t.is_empty())
            .map(str::to_owned))
    }

    /// Whether a secret's `origin` counts as present, as upstream's `Origin.Empty` decides
    /// (go-vela/server `compiler/types/yaml/secret.go`): present when it has an
    /// `environment` or `parameters` (even empty ones), a non-empty `image`, `name` or
    /// `pull`, or a non-empty `secrets` list. A compiled origin also counts when it has an
    /// `id`. Anything but a mapping or null counts as present, so that it is reported.
    pub fn origin_present(&mut self, origin: Reached) -> Result<bool, InputError> {
        if self.doc.is_null(origin.id) {
            return Ok(false);
        }
        if !self.doc.is_map(origin.id) {
            return Ok(true);
        }
        for key in ["environment", "parameters"] {
            if self.get_set(origin, key)?.is_some() {
                return Ok(true);
            }
        }
        for key in ["image", "name", "pull", "id"] {
            if let Some(v) = self.get_set(origin, key)?
                && self.doc.text(v.id) != Some("")
            {
                return Ok(true);
            }
        }
        if let Some(v) = self.get_set(origin, "secrets")?
            && self.doc.items(v.id).is_none_or(|items| !items.is_empty())
        {
            return Ok(true);
        }
        Ok(false)
    }

    /// Reads one container and records its image use.
    pub fn container(&mut self, node: Reached, place: Place) -> Result<(), InputError> {
        let doc = self.doc;
        let what = match place.kind {
            ContainerKind::Step => "step",
            ContainerKind::Service => "service",
            ContainerKind::Secret => "secret origin",
            ContainerKind::Image => "image",
            ContainerKind::Container => "container",
            ContainerKind::Placeholder => "placeholder",
            ContainerKind::Volume => "image volume",
        };
        if !doc.is_map(node.id) {
            let pos = self.pos(node);
            let problem = self.problem(
                node,
                format!(
                    "{what} `{}` is a {}, expected a mapping with `image:`",
                    place.fallback_name,
                    doc.kind_name(node.id)
                ),
            );
            let name = place.fallback_name.clone();
            let disposition = Disposition::Invalid(vec![problem]);
            self.push(
                String::new(),
                None,
                PullPolicy::NotPresent,
                pos,
                name,
                &place,
                disposition,
            );
            return Ok(());
        }

        let name = self
            .text(node, "name")?
            .or_else(|| place.secret_name.clone())
            .unwrap_or_else(|| place.fallback_name.clone());
        self.misspelt_keys(node, &place, what, &name);
        let image_node = self.get(node, "image")?;
        let template = self.get_set(node, "template")?;
        let pull_node = self.get_set(node, "pull")?;
        let mut problems = Vec::new();
        // The `pull:` value as written when it is not a known policy.
        let mut unknown_policy: Option<String> = None;
        let mut image_not_text = false;

        let image = match image_node {
            Some(v) if doc.is_null(v.id) => String::new(),
            Some(v) => match doc.text(v.id) {
                Some(text) => text.to_owned(),
                None => {
                    image_not_text = true;
                    problems.push(self.problem(
                        v,
                        format!(
                            "{}`image` must be a string, found a {}",
                            self.whose(what, &name, &place),
                            doc.kind_name(v.id)
                        ),
                    ));
                    String::new()
                }
            },
            None => String::new(),
        };
        // The `image:` value where this container uses it, else the container.
        let at = image_node.unwrap_or(node);
        let pos = self.pos(at).or(self.pos(node));

        let env = self.env(node, &place)?;
        let mut unresolved = Vec::new();
        // Whether the image's own substitution failed (the worker's failure, said once).
        let mut substitution_failed = false;
        let substituted = match env.substitute(&image) {
            Outcome::Unchanged => None,
            // The compiler decodes the step again after it substitutes the YAML text.
            Outcome::Substituted(s) if self.mode == Mode::Compile && env.compiled => {
                match crate::substitute::redecode_plain(&image, &s) {
                    Ok(decoded) => Some(decoded),
                    Err(()) => {
                        return Err(self.refuse(
                            at,
                            crate::Refusal::SubstitutedStep {
                                step: name,
                                stage: place.stage.clone(),
                                field: "image".to_owned(),
                                text: s,
                            },
                        ));
                    }
                }
            }
            Outcome::Substituted(s) => Some(s),
            Outcome::Unresolved(variables) => {
                unresolved.extend(variables);
                None
            }
            Outcome::Error(e) if e.is_own_limit() => {
                substitution_failed = true;
                problems.push(self.problem(
                    at,
                    format!(
                        "{}pullcheck does not substitute the variables of image {image:?}: {e}",
                        self.whose(what, &name, &place),
                    ),
                ));
                None
            }
            Outcome::Error(e) => {
                substitution_failed = true;
                problems.push(self.problem(
                    at,
                    format!(
                        "{}cannot substitute the variables of image {image:?}: {e} ({})",
                        self.whose(what, &name, &place),
                        worker_failure(place.kind, e)
                    ),
                ));
                None
            }
        };

        let policy = match pull_node {
            None => PullPolicy::NotPresent,
            Some(v) => match doc.text(v.id).map(|t| (t, env.substitute(t))) {
                Some((text, Outcome::Error(e))) => {
                    problems.push(self.problem(
                        v,
                        format!(
                            "{}cannot substitute the variables of pull value {text:?}: {e}",
                            self.whose(what, &name, &place)
                        ),
                    ));
                    PullPolicy::NotPresent
                }
                Some((_, Outcome::Unresolved(variables))) => {
                    unresolved.extend(variables.into_iter().map(|mut v| {
                        v.field = Field::Pull;
                        v
                    }));
                    PullPolicy::NotPresent
                }
                Some((text, outcome)) => {
                    let text = match &outcome {
                        Outcome::Substituted(s) => s.as_str(),
                        _ => text,
                    };
                    PullPolicy::from_vela(text).unwrap_or_else(|| {
                        unknown_policy = Some(text.to_owned());
                        problems.push(self.problem(
                            v,
                            format!(
                                "unknown pull value {text:?} for {what} `{name}`; allowed \
                                 values: {VELA_PULL_VALUES}"
                            ),
                        ));
                        PullPolicy::NotPresent
                    })
                }
                None => {
                    problems.push(self.problem(
                        v,
                        format!(
                            "`pull` of {what} `{name}` must be a string, found a {}; allowed \
                             values: {VELA_PULL_VALUES}",
                            doc.kind_name(v.id)
                        ),
                    ));
                    PullPolicy::NotPresent
                }
            },
        };

        // The worker substitutes every string of the container, not only its image.
        if matches!(
            place.kind,
            ContainerKind::Step | ContainerKind::Service | ContainerKind::Secret
        ) && !substitution_failed
        {
            let known = match (self.mode, place.kind) {
                (Mode::Run, _) => crate::compiler::CONTAINER_JSON_KEYS,
                (_, ContainerKind::Service) => SERVICE_KEYS,
                (_, ContainerKind::Secret) => ORIGIN_KEYS,
                _ => STEP_KEYS,
            };
            if let Some((field, at_field, e)) = crate::compiler::worker_substitution_error(
                self,
                node,
                &env,
                self.mode == Mode::Compile && env.compiled,
                known,
                self.mode == Mode::Run,
            )? {
                problems.push(self.problem(
                    at_field,
                    format!(
                        "{}cannot substitute the variables of `{field}`: {e} ({})",
                        self.whose(what, &name, &place),
                        worker_failure(place.kind, e)
                    ),
                ));
            }
        }

        // Upstream expands a step's template only when the template has a name.
        let template_name = match template {
            Some(t) if doc.is_map(t.id) => self.text(t, "name")?,
            Some(t) => {
                problems.push(self.problem(
                    t,
                    format!(
                        "{}`template` must be a mapping with `name` and `vars`, found a {}",
                        self.whose(what, &name, &place),
                        doc.kind_name(t.id)
                    ),
                ));
                None
            }
            None => None,
        };

        let template_name = template_name.filter(|_| self.expands_templates);
        let disposition = if let Some(template_name) = template_name {
            Disposition::Skip(Skip::Template {
                name: template_name.to_string(),
            })
        } else if image == INIT_IMAGE {
            Disposition::Skip(Skip::Init)
        } else {
            if image.is_empty() && !image_not_text {
                let missing = match template {
                    Some(t) if doc.is_map(t.id) => "has no `image`, and its `template` no `name`",
                    Some(_) => "has no `image`",
                    None => "has neither `image` nor `template`",
                };
                problems.insert(0, self.problem(at, format!("{what} `{name}` {missing}")));
            }
            if let Some(written) = unknown_policy.filter(|_| !problems.is_empty()) {
                Disposition::UnknownPolicy { written, problems }
            } else if !problems.is_empty() {
                Disposition::Invalid(problems)
            } else if !unresolved.is_empty() {
                Disposition::Unresolved(Unresolved {
                    at: (self.mode == Mode::Compile).then(|| self.loc(at)),
                    image: image.clone(),
                    variables: unresolved,
                })
            } else {
                Disposition::Check
            }
        };
        let substituted = substituted.filter(|_| disposition == Disposition::Check);
        self.push(image, substituted, policy, pos, name, &place, disposition);
        Ok(())
    }

    /// Warns about the container's own keys that upstream does not know but that are a
    /// likely misspelling of one it does (`imagee`, `pul`): Vela ignores unknown keys, so
    /// the misspelt value silently does nothing. Source only; a compiled build is written
    /// by the server.
    fn misspelt_keys(&mut self, node: Reached, place: &Place, what: &str, name: &str) {
        if self.mode != Mode::Compile {
            return;
        }
        let known = match place.kind {
            ContainerKind::Step => STEP_KEYS,
            ContainerKind::Service => SERVICE_KEYS,
            ContainerKind::Secret => ORIGIN_KEYS,
            ContainerKind::Image
            | ContainerKind::Container
            | ContainerKind::Placeholder
            | ContainerKind::Volume => return,
        };
        let Value::Map(entries) = self.doc.value(node.id) else {
            return;
        };
        for &(key, _) in entries {
            let Value::Scalar {
                text, merge: false, ..
            } = self.doc.value(key)
            else {
                continue;
            };
            if known.contains(&text.as_str()) {
                continue;
            }
            if let Some(suggestion) = closest_key(text, known) {
                let at = match self.doc.written_pos(key) {
                    Some(p) => format!("{}:{}:{}", self.file, p.line, p.column),
                    None => self.file.to_owned(),
                };
                self.warnings.push(format!(
                    "{at}: unknown key `{text}` in {what} `{name}` (Vela ignores it); did \
                     you mean `{suggestion}`?"
                ));
            }
        }
    }

    /// The variables the container's `${VAR}`s see, as [`Env`] describes: in source its
    /// pipeline's and stage's (`place.scope_env`), then its own `environment`; compiled,
    /// its own `environment` only; and the targets of its `secrets`.
    fn env(&mut self, node: Reached, place: &Place) -> Result<Env, InputError> {
        let mut values = match self.mode {
            Mode::Compile => place.scope_env.clone(),
            Mode::Run => HashMap::new(),
        };
        if let Some(env) = self.get_set(node, "environment")? {
            values.extend(self.env_values(env)?);
        }
        let mut secrets = Vec::new();
        if let Some(list) = self.get_set(node, "secrets")? {
            let items: Vec<Reached> = match self.doc.items(list.id) {
                Some(items) => items
                    .iter()
                    .map(|&item| self.doc.reach(list, None, item))
                    .collect(),
                None => vec![list],
            };
            for item in items {
                if let Some(name) = self.doc.text(item.id) {
                    // `- docker_password`: source and target are the name.
                    secrets.push((name.to_owned(), name.to_owned()));
                } else if self.doc.is_map(item.id) {
                    let source = self.text(item, "source")?.unwrap_or_default();
                    if let Some(target) = self.text(item, "target")? {
                        secrets.push((target, source));
                    }
                }
            }
        }
        // `parameters:` of a step or secret origin become `PARAMETER_<KEY>` (go-vela/server
        // `EnvironmentStep`, `EnvironmentSecrets`), after the server's variables.
        let mut opaque = Vec::new();
        if self.mode == Mode::Compile
            && matches!(place.kind, ContainerKind::Step | ContainerKind::Secret)
            && let Some(params) = self.get_set(node, "parameters")?
            && self.doc.is_map(params.id)
        {
            // The server ranges over a Go map: when keys that differ only in case
            // (`Foo`, `foo`) give one name different values, which is set differs from
            // build to build.
            let mut set: Vec<(String, Vec<String>, Result<String, String>)> = Vec::new();
            for (key, value) in self.entries(params)? {
                let name = format!("PARAMETER_{}", go_to_upper(&key));
                let Some(v) = self.parameter_value(value) else {
                    continue;
                };
                match set.iter_mut().find(|(n, ..)| *n == name) {
                    Some((_, keys, first)) => {
                        keys.push(key);
                        if *first != v {
                            *first = Err(String::new());
                        }
                    }
                    None => set.push((name, vec![key], v)),
                }
            }
            for (name, keys, v) in set {
                match v {
                    Ok(v) => {
                        values.insert(name, v);
                    }
                    Err(_) if keys.len() > 1 => {
                        values.remove(&name);
                        opaque.push((name, ValueSource::ParameterCase { keys }));
                    }
                    Err(what) => {
                        values.remove(&name);
                        opaque.push((name, ValueSource::Unrendered { what }));
                    }
                }
            }
        }
        Ok(Env {
            mode: self.mode,
            // The compiler substitutes steps only (`SubstituteSteps`, `SubstituteStages`).
            compiled: place.kind == ContainerKind::Step,
            build: match self.mode {
                Mode::Compile => self.build_env.clone(),
                Mode::Run => HashMap::new(),
            },
            values,
            secrets,
            opaque,
            withheld: place.withheld.clone(),
        })
    }

    /// A parameter's value as Vela's `api.ToString` (go-vela/server v0.28.8
    /// `api/types/string.go`) writes it into `PARAMETER_*`, from the value yaml.v3
    /// decoded into `map[string]any`: a string as it is; a boolean `true`/`false`; an
    /// integer in decimal (`0x10` is `16`); a float as `strconv.FormatFloat(v, 'g', -1,
    /// 64)` (`1e3` is `1000`, `1e6` `1e+06`); a list of scalars re-read as `[]string` and
    /// joined with `,` (`unmarshalSlice`; a null item is dropped, as go-yaml v3.0.4's
    /// `sequence()` drops it from a `[]string`, decode.go:749-759); a mapping, or a list
    /// holding a list or a mapping, as JSON (`ghodss/yaml.YAMLToJSON` of its YAML: keys
    /// sorted, no blanks, Go's escapes). `None` for null (no variable); `Err` naming what
    /// it is for a value not reproduced (a timestamp, which `ToString` writes as a
    /// quoted RFC 3339 time; an infinite or NaN float inside JSON, which is an error
    /// text upstream).
    fn parameter_value(&mut self, value: Reached) -> Option<Result<String, String>> {
        let doc = self.doc;
        match doc.value(value.id) {
            Value::Null => None,
            Value::Map(_) => Some(self.json_value(value)),
            Value::Seq(items) => {
                let nested = items
                    .iter()
                    .any(|&i| matches!(doc.value(i), Value::Seq(_) | Value::Map(_)));
                if nested {
                    return Some(self.json_value(value));
                }
                Some(
                    items
                        .iter()
                        .filter(|&&i| !doc.is_null(i))
                        .map(|&i| match doc.value(i) {
                            Value::Scalar { text, .. } => yaml_v3_marshalled(
                                resolve_node(doc, i).unwrap_or(Resolved::Str),
                                text,
                            ),
                            _ => Err("a nested value".to_owned()),
                        })
                        .collect::<Result<Vec<_>, _>>()
                        .map(|v| v.join(",")),
                )
            }
            Value::Scalar { text, .. } => {
                Some(match resolve_node(doc, value.id).unwrap_or(Resolved::Str) {
                    Resolved::Float(f) => Ok(go_format_g(f)),
                    r => yaml_v3_marshalled(r, text),
                })
            }
            Value::Alias(_) => None,
        }
    }

    /// `value` as `api.ToString`'s `unmarshalMap` writes it: JSON with sorted keys.
    fn json_value(&mut self, value: Reached) -> Result<String, String> {
        let doc = self.doc;
        match doc.value(value.id) {
            Value::Null => Ok("null".to_owned()),
            Value::Map(_) => {
                let mut entries = self
                    .entries(value)
                    .map_err(|_| "a mapping that cannot be read".to_owned())?;
                entries.sort_by(|a, b| a.0.cmp(&b.0));
                let mut parts = Vec::with_capacity(entries.len());
                for (key, v) in entries {
                    parts.push(format!("{}:{}", go_json_string(&key), self.json_value(v)?));
                }
                Ok(format!("{{{}}}", parts.join(",")))
            }
            Value::Seq(items) => {
                let mut parts = Vec::with_capacity(items.len());
                for &i in items {
                    let item = doc.reach(value, None, i);
                    parts.push(self.json_value(item)?);
                }
                Ok(format!("[{}]", parts.join(",")))
            }
            Value::Scalar { text, .. } => {
                match resolve_node(doc, value.id).unwrap_or(Resolved::Str) {
                    Resolved::Str | Resolved::Merge => Ok(go_json_string(text)),
                    Resolved::Bool => Ok(text.to_ascii_lowercase()),
                    Resolved::Int(i) => Ok(i.to_string()),
                    Resolved::Uint(u) => Ok(u.to_string()),
                    Resolved::Float(f) if f.is_finite() => Ok(go_json_float(f)),
                    Resolved::Float(_) => Err(format!("the parameter value {text:?} in JSON")),
                    Resolved::Timestamp => Err(format!("the timestamp {text:?}")),
                    Resolved::Null => Ok("null".to_owned()),
                }
            }
            Value::Alias(_) => Err("an alias".to_owned()),
        }
    }

    /// The variables of an `environment` value: a mapping of names to scalars, or (as
    /// Vela's `raw.StringSliceMap` also reads it) a list of `NAME=value` strings, or one
    /// such string, which `raw.StringSlice` decodes as a one-item list.
    pub fn env_values(&mut self, env: Reached) -> Result<Vec<(String, String)>, InputError> {
        let mut out = Vec::new();
        if self.doc.is_map(env.id) {
            for (key, value) in self.entries(env)? {
                if let Some(text) = self.doc.text(value.id) {
                    out.push((key, text.to_owned()));
                } else if self.doc.is_null(value.id) {
                    out.push((key, String::new()));
                }
            }
        } else if let Some(items) = self.doc.items(env.id) {
            for &item in items {
                if let Some((key, value)) = self.doc.text(item).and_then(|t| t.split_once('=')) {
                    out.push((key.to_owned(), value.to_owned()));
                }
            }
        } else if !self.doc.is_null(env.id) {
            // `raw.StringSlice` decodes a lone string as a one-item list.
            if let Some((key, value)) = self.doc.text(env.id).and_then(|t| t.split_once('=')) {
                out.push((key.to_owned(), value.to_owned()));
            }
        }
        Ok(out)
    }

    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        image: String,
        substituted: Option<String>,
        policy: PullPolicy,
        pos: Option<Pos>,
        name: String,
        place: &Place,
        disposition: Disposition,
    ) {
        self.out.push(ImageUse {
            image,
            substituted,
            policy,
            origin: Origin {
                file: Some(self.file.to_owned()),
                line: pos.map(|p| p.line),
                column: pos.map(|p| p.column),
                kind: place.kind,
                name,
                stage: place.stage.clone(),
                pod: None,
            },
            disposition,
        });
    }
}

/// Go's `strings.ToUpper`: each character's simple upper case mapping, so a character
/// whose upper case is several (`ß`) stays as it is.
fn go_to_upper(s: &str) -> String {
    s.chars()
        .map(|c| {
            let mut up = c.to_uppercase();
            match (up.next(), up.next()) {
                (Some(u), None) => u,
                _ => c,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values printed by Go 1.19's `strconv.FormatFloat(f, 'g', -1, 64)` and
    /// `json.Marshal` on this machine.
    #[test]
    fn floats_and_strings_are_written_as_go_writes_them() {
        for (f, g, json) in [
            (1e6, "1e+06", "1000000"),
            (1000.0, "1000", "1000"),
            (1.1, "1.1", "1.1"),
            (1234567.0, "1.234567e+06", "1234567"),
            (0.0001, "0.0001", "0.0001"),
            (0.00001, "1e-05", "0.00001"),
            (1e21, "1e+21", "1e+21"),
            (123456.7, "123456.7", "123456.7"),
        ] {
            assert_eq!(
                (go_format_g(f).as_str(), go_json_float(f).as_str()),
                (g, json)
            );
        }
        assert_eq!(
            go_json_string("<&>\u{2028}\u{1}\""),
            r#""\u003c\u0026\u003e\u2028\u0001\"""#
        );
    }
}
