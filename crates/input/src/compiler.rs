//! The checks by which Vela refuses a pipeline, in the order its compiler makes them
//! (go-vela/server v0.28.8): decoding (`internal/yaml.go`, the `compiler/types/yaml`
//! types, `raw.StringSliceMap`), template expansion (`compiler/native/expand.go`),
//! `ValidateYAML` and, after the ruleset purge, `ValidatePipeline`
//! (`compiler/native/validate.go`). The first refusal is returned, as an
//! [`InputError`] carrying its [`Refusal`] at the position of what is refused.
//!
//! The ruleset purge needs the build (branch, event, ...), which is not known here, so
//! a name counts twice only when both containers are kept by every build: no
//! `ruleset`, or one of `status` rules only (which the compiler does not evaluate).
//! Another pair is a warning.
//!
//! A compiled build is decoded by the worker with Go's encoding/json, which
//! [`crate::gojson`] does before the build is read; none of these checks apply to it.

use std::collections::{HashMap, HashSet};

use crate::container::Reader;
use crate::substitute::Mode;
use crate::tree::Reached;
use crate::yaml::Value;
use crate::{ContainerKind, InputError, Refusal};

/// Names Vela injects or skips when it counts names (`constants.CloneName`,
/// `constants.InitName`).
const CLONE_OR_INIT: [&str; 2] = ["clone", "init"];

/// The rule keys of a ruleset that the compiler evaluates against the build.
const BUILD_RULES: [&str; 11] = [
    "branch", "comment", "event", "path", "repo", "sender", "tag", "target", "label", "instance",
    "eval",
];

/// A step as the checks see it.
struct Step {
    node: Reached,
    name: Option<String>,
    name_node: Option<Reached>,
    stage: Option<String>,
    template: Option<(String, Reached)>,
    always_kept: bool,
    /// The `name` and `report_as` after the compiler's substitution (`SubstituteSteps`
    /// runs before `ValidatePipeline` compares them); `None` when written without a
    /// `${`, or for services and secret origins, which the compiler does not substitute.
    substituted: Option<(Option<String>, Option<String>)>,
}

impl Reader<'_> {
    /// An error carrying `refusal`, at `node`.
    pub(crate) fn refuse(&self, node: Reached, refusal: Refusal) -> InputError {
        let mut e = self.error_at(node, refusal.to_string());
        e.refusal = Some(Box::new(refusal));
        e
    }

    /// Whether every build keeps the container: no ruleset, or one whose rules the
    /// compiler does not evaluate (`status` only); an `unless` counts as a rule.
    fn always_kept(&mut self, container: Reached) -> Result<bool, InputError> {
        let Some(ruleset) = self.get_set(container, "ruleset")? else {
            return Ok(true);
        };
        if !self.doc.is_map(ruleset.id) {
            return Ok(false);
        }
        if self.rules_set(ruleset, &BUILD_RULES)? {
            return Ok(false);
        }
        if let Some(rules) = self.get_set(ruleset, "if")?
            && self.rules_set(rules, &BUILD_RULES)?
        {
            return Ok(false);
        }
        if let Some(rules) = self.get_set(ruleset, "unless")?
            && (self.rules_set(rules, &BUILD_RULES)? || self.rules_set(rules, &["status"])?)
        {
            return Ok(false);
        }
        Ok(true)
    }

    /// Whether any of `keys` is set to something non-empty in mapping `rules`.
    fn rules_set(&mut self, rules: Reached, keys: &[&str]) -> Result<bool, InputError> {
        for key in keys {
            if let Some(v) = self.get_set(rules, key)?
                && self.non_empty(v)
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Not null, not an empty string, list or mapping.
    fn non_empty(&self, v: Reached) -> bool {
        match self.doc.value(v.id) {
            Value::Null => false,
            Value::Scalar { text, .. } => !text.is_empty(),
            Value::Seq(items) => !items.is_empty(),
            Value::Map(entries) => !entries.is_empty(),
            Value::Alias(_) => true,
        }
    }

    /// An `environment` in source as Vela decodes it: `raw.StringSliceMap` (a mapping of
    /// scalars, or `NAME=value` strings). A compiled build's was decoded by
    /// [`crate::gojson`] before it was read.
    pub(crate) fn check_environment(&mut self, env: Reached) -> Result<(), InputError> {
        match self.doc.value(env.id) {
            Value::Null | Value::Alias(_) => Ok(()),
            Value::Map(_) => {
                for (key, value) in self.entries(env)? {
                    let found = match self.doc.value(value.id) {
                        Value::Seq(_) => "list",
                        Value::Map(_) => "mapping",
                        _ => continue,
                    };
                    return Err(self.refuse(
                        value,
                        Refusal::Environment {
                            variable: Some(key),
                            found: found.to_owned(),
                        },
                    ));
                }
                Ok(())
            }
            Value::Scalar { text, .. } => {
                if text.contains('=') {
                    Ok(())
                } else {
                    Err(self.refuse(
                        env,
                        Refusal::Environment {
                            variable: None,
                            found: format!("{text:?} has no \"=\""),
                        },
                    ))
                }
            }
            Value::Seq(items) => {
                for &item in items {
                    let item = self.doc.reach(env, None, item);
                    let found = match self.doc.value(item.id) {
                        Value::Scalar { text, .. } if text.contains('=') => continue,
                        // `StringSliceMap` reads a `[]string` first, where go-yaml v3.0.4
                        // drops a null item (decode.go:554-563, 749-759).
                        Value::Null => continue,
                        Value::Scalar { text, .. } => format!("the item {text:?} has no \"=\""),
                        _ => format!("an item is a {}", self.doc.kind_name(item.id)),
                    };
                    return Err(self.refuse(
                        item,
                        Refusal::Environment {
                            variable: None,
                            found,
                        },
                    ));
                }
                Ok(())
            }
        }
    }
}

/// Refuses what Vela refuses in `root`, the document's top-level mapping; nothing for a
/// compiled build (`r.mode` is [`Mode::Run`]), whose JSON [`crate::gojson`] decoded as
/// the worker does before it was read. Warnings (a name that two containers with
/// rulesets share) go to `r.warnings`.
pub(crate) fn check(r: &mut Reader<'_>, root: Reached) -> Result<(), InputError> {
    if r.mode == Mode::Run {
        return Ok(());
    }
    source(r, root)
}

/// What a bool field of go.yaml.in/yaml/v3 decodes `node` to: a plain `true`/`false`
/// (any of YAML 1.2's cases), and, into a typed `bool` only, YAML 1.1's words (`yes`,
/// `on`, `y`, `no`, `off`, `n` in their three cases) quoted or not; `None` for anything
/// else (a quoted `"true"`, a number), which the decoder refuses.
///
/// The scalar's tag counts ([`crate::resolve::resolve_node`]): `!foo yes` is true,
/// `!foo true` a string, which the decoder refuses.
pub(crate) fn yaml_v3_bool(r: &Reader<'_>, node: Reached) -> Option<bool> {
    let Value::Scalar { text, .. } = r.doc.value(node.id) else {
        return None;
    };
    let resolved = crate::resolve::resolve_node(r.doc, node.id).ok()?;
    let bool = resolved == crate::resolve::Resolved::Bool;
    match text.as_str() {
        "true" | "True" | "TRUE" if bool => Some(true),
        "false" | "False" | "FALSE" if bool => Some(false),
        _ if resolved != crate::resolve::Resolved::Str => None,
        "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => Some(true),
        "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => Some(false),
        _ => None,
    }
}

/// The decoding of go-vela/server's `yaml.Build` (go.yaml.in/yaml/v3, `internal/yaml.go`),
/// every typed field of `compiler/types/yaml` ([`crate::decode`]): a field of the wrong
/// YAML type fails the whole file (`unable to unmarshal yaml`), at the value.
pub(crate) fn decode_source(r: &mut Reader<'_>, root: Reached) -> Result<(), InputError> {
    crate::decode::decode(r, root)
}

/// Whether `node` is how YAML reads `{{ x }}`: a mapping whose one key is a mapping.
pub(crate) fn go_template_braces(r: &Reader<'_>, node: Reached) -> bool {
    match r.doc.own_entries(node.id) {
        Some([(key, _)]) => r.doc.is_map(*key),
        _ => false,
    }
}

/// The node `ParseYAML` (`internal/yaml.go` lines 36–43) takes the version from: of the
/// root mapping's keys and values in order, the first scalar whose value is `version`
/// (a key or a value, quoted or not, never an alias or a merged key), then the node
/// after it. `None` when there is none, or nothing after it (where upstream indexes
/// past the end and panics).
fn parse_yaml_version(r: &Reader<'_>, root: Reached) -> Option<Reached> {
    let doc = r.doc;
    let content: Vec<_> = doc
        .own_entries(root.id)?
        .iter()
        .flat_map(|&(k, v)| [k, v])
        .collect();
    let i = content.iter().position(|&n| {
        !doc.is_alias(n) && matches!(doc.value(n), Value::Scalar { text, .. } if text == "version")
    })?;
    content.get(i + 1).map(|&n| doc.reach(root, None, n))
}

/// A node's `Value` as go-yaml v3 keeps it: a scalar's text, an alias's name (not what
/// it names: `version: *l` with `&l legacy` is `l`), empty for a collection or null.
fn parse_yaml_value(r: &Reader<'_>, id: crate::tree::NodeId) -> String {
    let node = &r.doc.nodes[id];
    match &node.value {
        Value::Alias(_) => node.alias_name.clone().unwrap_or_default(),
        Value::Scalar { text, .. } => text.clone(),
        _ => String::new(),
    }
}

/// Pipeline source, as the compiler refuses it.
fn source(r: &mut Reader<'_>, root: Reached) -> Result<(), InputError> {
    // Parsing (`internal/yaml.go`): the version, then decoding.
    if let Some(v) = parse_yaml_version(r, root)
        && parse_yaml_value(r, v.id) == "legacy"
    {
        return Err(r.refuse(v, Refusal::LegacyVersion));
    }
    // `ValidateYAML` looks at the decoded `version`, through aliases and merge keys.
    let version = r.get(root, "version")?;
    let metadata = r.get_set(root, "metadata")?;
    let render_inline = match metadata {
        Some(m) => r
            .get_set(m, "render_inline")?
            .is_some_and(|v| yaml_v3_bool(r, v) == Some(true)),
        None => false,
    };
    if let Some(env) = r.get_set(root, "environment")? {
        r.check_environment(env)?;
    }
    let steps_node = r.get_set(root, "steps")?;
    let stages_node = r.get_set(root, "stages")?;
    let mut steps: Vec<Step> = Vec::new();
    // (stage name as Vela names it, its node, whether a step of it is kept by every build)
    let mut stages: Vec<(String, Reached)> = Vec::new();
    if let Some(node) = stages_node
        && r.doc.is_map(node.id)
    {
        for (key, stage) in r.entries(node)? {
            if !r.doc.is_map(stage.id) {
                continue;
            }
            // `StageSlice.UnmarshalYAML`: an empty `name:` is the key, as an absent one.
            let name = r
                .text(stage, "name")?
                .filter(|n| !n.is_empty())
                .unwrap_or(key);
            string_slices(r, stage, &format!("stages.{name}"), &["needs"])?;
            if let Some(env) = r.get_set(stage, "environment")? {
                r.check_environment(env)?;
            }
            let what = format!("stages.{name}.steps");
            for (i, item) in r.list(stage, "steps", &what)?.into_iter().enumerate() {
                steps.extend(step(r, item, &format!("{what}[{i}]"), Some(name.clone()))?);
            }
            stages.push((name, stage));
        }
    }
    for (i, item) in r.list(root, "steps", "steps")?.into_iter().enumerate() {
        steps.extend(step(r, item, &format!("steps[{i}]"), None)?);
    }
    let mut services = Vec::new();
    for (i, service) in r
        .list(root, "services", "services")?
        .into_iter()
        .enumerate()
    {
        if decodes(r, service)? {
            string_slices(
                r,
                service,
                &format!("services[{i}]"),
                &["entrypoint", "ports"],
            )?;
            services.push(service);
        }
    }
    let mut origins = Vec::new();
    for secret in r.list(root, "secrets", "secrets")? {
        if let Some(origin) = r.get(secret, "origin")?
            && r.origin_present(origin)?
            && decodes(r, origin)?
        {
            origins.push(origin);
        }
    }
    let templates = templates(r, root)?;

    // Expansion (`compileInline`, `ExpandSteps`).
    if render_inline {
        for (name, type_node, template_type) in &templates.all {
            if !supported_type(template_type) {
                return Err(r.refuse(
                    type_node.unwrap_or(root),
                    Refusal::UnsupportedTemplateType {
                        template: name.clone(),
                        template_type: template_type.clone(),
                    },
                ));
            }
        }
    } else if !templates.all.is_empty() {
        let mut fetched: HashSet<String> = HashSet::new();
        for s in &steps {
            let Some((template, at)) = &s.template else {
                continue;
            };
            let Some((source, type_node, template_type)) = templates.by_name.get(template) else {
                return Err(r.refuse(
                    *at,
                    Refusal::MissingTemplate {
                        template: template.clone(),
                        step: s.name.clone().unwrap_or_default(),
                    },
                ));
            };
            if !s.always_kept {
                continue;
            }
            if !fetched.contains(source) && !supported_type(template_type) {
                return Err(r.refuse(
                    type_node.unwrap_or(*at),
                    Refusal::UnsupportedTemplateType {
                        template: template.clone(),
                        template_type: template_type.clone(),
                    },
                ));
            }
            fetched.insert(source.clone());
            // `mergeTemplate`, for every step, once the template is fetched.
            if let Some((format_node, format)) = templates.formats.get(template)
                && !["go", "golang", "starlark", ""].contains(&format.as_str())
            {
                return Err(r.refuse(
                    format_node.unwrap_or(*at),
                    Refusal::UnsupportedTemplateFormat {
                        template: template.clone(),
                        template_format: format.clone(),
                    },
                ));
            }
        }
    }
    // A template step is expanded (and so replaced) only when there are templates.
    let expanded = !templates.all.is_empty() && !render_inline;

    // `ValidateYAML`, in its order.
    if version.is_none_or(|v| r.doc.text(v.id).is_none_or(str::is_empty)) {
        return Err(r.refuse(root, Refusal::NoVersion));
    }
    let has_stages = stages_node.is_some_and(|n| r.non_empty(n));
    let has_steps = steps_node.is_some_and(|n| r.non_empty(n));
    if !has_stages && !has_steps && !render_inline && templates.all.is_empty() {
        return Err(r.refuse(root, Refusal::NothingToRun));
    }
    if has_stages && has_steps {
        let later = match (stages_node, steps_node) {
            (Some(a), Some(b))
                if r.pos(a).map(|p| (p.line, p.column)) > r.pos(b).map(|p| (p.line, p.column)) =>
            {
                a
            }
            (_, Some(b)) => b,
            (Some(a), None) => a,
            (None, None) => root,
        };
        return Err(r.refuse(later, Refusal::StagesAndSteps));
    }
    if render_inline && let Some(s) = steps.iter().find(|s| s.template.is_some()) {
        return Err(r.refuse(
            s.template.as_ref().map_or(s.node, |t| t.1),
            Refusal::RenderInlineTemplateStep {
                step: s.name.clone().unwrap_or_default(),
                stage: s.stage.clone(),
            },
        ));
    }
    for service in &services {
        required(r, *service, ContainerKind::Service)?;
    }
    // `validateYAMLStages`: each stage's `needs`, then its steps; then the steps.
    for (name, stage) in &stages {
        if needs(r, *stage)?.iter().any(|n| n == name) {
            let at = r.get_set(*stage, "needs")?.unwrap_or(*stage);
            return Err(r.refuse(at, Refusal::StageNeedsItself { name: name.clone() }));
        }
        for s in steps.iter().filter(|s| s.stage.as_ref() == Some(name)) {
            if !(expanded && s.template.is_some()) {
                validate_step(r, s)?;
            }
        }
    }
    for s in steps.iter().filter(|s| s.stage.is_none()) {
        if expanded && s.template.is_some() {
            continue;
        }
        validate_step(r, s)?;
    }
    for origin in &origins {
        required(r, *origin, ContainerKind::Secret)?;
    }

    // `SubstituteSteps` / `SubstituteStages`, before the purge: every step.
    let global_env = match r.get_set(root, "environment")? {
        Some(env) if crate::pipeline::Global::of(r, root)?.steps => Some(env),
        _ => None,
    };
    for s in &mut steps {
        if expanded && s.template.is_some() {
            continue;
        }
        let stage_env = match &s.stage {
            Some(name) => match stages.iter().find(|(n, _)| n == name) {
                Some((_, stage)) => r.get_set(*stage, "environment")?,
                None => None,
            },
            None => None,
        };
        if let Some(env) = substitutes(r, s, global_env, stage_env)? {
            let report_as = r.text(s.node, "report_as")?;
            let sub = |text: Option<String>| {
                text.map(|t| {
                    crate::envsubst::eval(&t, &mut |name| env.compile_lookup(name)).unwrap_or(t)
                })
            };
            s.substituted = Some((sub(s.name.clone()), sub(report_as)));
        }
    }

    // `ValidatePipeline`, after the purge: names kept by every build.
    let mut seen = HashMap::new();
    for (name, stage) in &stages {
        if seen.contains_key(name) {
            return Err(r.refuse(*stage, Refusal::DuplicateStage { name: name.clone() }));
        }
        seen.insert(name.clone(), *stage);
    }
    duplicates(r, &steps, expanded, ContainerKind::Step)?;
    let services: Vec<Step> = services
        .iter()
        .map(|&n| plain(r, n))
        .collect::<Result<_, _>>()?;
    duplicates(r, &services, false, ContainerKind::Service)?;
    let origins: Vec<Step> = origins
        .iter()
        .map(|&n| plain(r, n))
        .collect::<Result<_, _>>()?;
    duplicates(r, &origins, false, ContainerKind::Secret)?;
    Ok(())
}

/// Most scalars one step's substitution check reads (aliases can make a small text
/// a large tree); past it the rest is not checked.
const MAX_SCALARS: usize = 100_000;

/// One string of a step as the compiler's re-encoding of it holds it.
struct Piece {
    /// Where it is written (a mapping key is refused at its value).
    node: Reached,
    text: String,
    plain: bool,
    /// The step's field it is in: `commands`, `image`, `environment`, ...
    field: &'static str,
    /// The mapping key it is the value of, when it is one (else a list item).
    key: Option<String>,
}

/// Whether the step parses and evaluates as the compiler substitutes it:
/// `SubstituteSteps` (go-vela/server v0.28.8 `compiler/native/substitute.go` lines
/// 37–75) re-encodes the whole step as YAML with yaml.v3 (its fields in `yaml.Step`'s
/// order, `compiler/types/yaml/step.go` lines 22–42; the environment it has by then:
/// the pipeline's when `metadata.environment` gives it to steps, its stage's, its own,
/// keys sorted), runs drone/envsubst v1.0.3's `Eval` over that one text, and decodes
/// the result again.
///
/// The text is modelled as the step's strings in that order, each after a line break
/// and its key (`image: `) or `- `; so an expression that one command opens and a later
/// one closes parses as it does upstream. Refused, at the string (for a one-line plain
/// scalar at the `${`): a `${` that does not parse ([`Refusal::Substitution`]); a
/// substring with a negative length, on which upstream's Go code panics
/// ([`Refusal::SubstringPanic`]); pullcheck's own bounds ([`Refusal::SubstitutionLimit`]);
/// and a multi-line string that yaml.v3 writes double-quoted (a space before a line
/// break or at the end, or a character it does not print: go.yaml.in/yaml/v3 v3.0.4
/// `emitterc.go` `yaml_emitter_analyze_scalar` lines 1414–1428, then
/// `yaml_emitter_select_scalar_style` lines 1066–1069) into which a value puts a `"`
/// or a `\` that is no escape, so that it no longer decodes
/// ([`Refusal::SubstitutedStep`]).
fn substitutes(
    r: &mut Reader<'_>,
    s: &Step,
    global_env: Option<Reached>,
    stage_env: Option<Reached>,
) -> Result<Option<crate::substitute::Env>, InputError> {
    let mut pieces: Vec<Piece> = Vec::new();
    let entries = r.entries(s.node)?;
    let mut values: HashMap<String, String> = HashMap::new();
    for &field in crate::container::STEP_KEYS {
        if field == "environment" {
            // The merged environment, as a Go map is written: keys sorted.
            let mut env: std::collections::BTreeMap<String, Reached> = Default::default();
            let own = entries
                .iter()
                .find(|(k, _)| k == "environment")
                .map(|e| e.1);
            for node in [global_env, stage_env, own].into_iter().flatten() {
                if r.doc.is_map(node.id) {
                    for (key, value) in r.entries(node)? {
                        env.insert(key, value);
                    }
                } else {
                    collect_pieces(r, node, field, None, true, &mut pieces)?;
                }
                for (key, value) in r.env_values(node)? {
                    values.insert(key, value);
                }
            }
            for (key, value) in env {
                collect_pieces(r, value, field, Some(key), true, &mut pieces)?;
            }
            continue;
        }
        if let Some((_, value)) = entries.iter().find(|(k, _)| k == field) {
            collect_pieces(r, *value, field, None, true, &mut pieces)?;
        }
    }
    if !pieces.iter().any(|p| p.text.contains("${")) {
        return Ok(None);
    }
    let step = s.name.clone().unwrap_or_default();
    let refusal_at = |piece: &Piece, refusal: Refusal, offset: Option<usize>| {
        let mut e = r.refuse(piece.node, refusal);
        if let Some(offset) = offset
            && piece.plain
            && !piece.text.contains('\n')
            && let Some(column) = e.column
        {
            e.column = Some(column + offset);
        }
        e
    };
    // The text, and where each piece starts in it (in characters).
    let mut text = String::new();
    let mut starts = Vec::with_capacity(pieces.len());
    let mut chars = 0;
    for piece in &pieces {
        let sep = match &piece.key {
            Some(key) => format!("\n{key}: "),
            None => "\n- ".to_owned(),
        };
        chars += sep.chars().count();
        text.push_str(&sep);
        starts.push(chars);
        chars += piece.text.chars().count();
        text.push_str(&piece.text);
    }
    let env = crate::substitute::Env::compile_time(values, r.build_env.clone());
    let template = match crate::envsubst::Template::parse_at(&text) {
        Ok(t) => t,
        Err((error, offset)) => {
            let i = starts.iter().rposition(|&st| st <= offset).unwrap_or(0);
            let refusal = own_limit_or(step, s.stage.clone(), error, |step, stage| {
                Refusal::Substitution { step, stage, error }
            });
            return Err(refusal_at(&pieces[i], refusal, Some(offset - starts[i])));
        }
    };
    // A negative substring length panics or not by the value's length: with a value
    // only the server has (`${VELA_BUILD_COMMIT:10:-1}`), the compiler panics only if it
    // does for every value (an empty one and a long one); else the outcome is unknown,
    // not refused (the image reading says it is unresolved).
    let certain = |error: &crate::envsubst::SubstError| {
        *error != crate::envsubst::SubstError::NegativeLength
            || ["", &"x".repeat(4096)].iter().all(|probe| {
                template
                    .eval(&mut |name| env.compile_lookup_probe(name, probe))
                    .is_err()
            })
    };
    match template.eval(&mut |name| env.compile_lookup(name)) {
        Ok(_) => {}
        Err(error) if !certain(&error) => {}
        Err(error) => {
            // Which string: the first that fails on its own (else the first with `${`).
            let i = pieces
                .iter()
                .position(|p| {
                    crate::envsubst::eval(&p.text, &mut |name| env.compile_lookup(name)).is_err()
                })
                .or_else(|| pieces.iter().position(|p| p.text.contains("${")))
                .unwrap_or(0);
            let field = pieces[i].field.to_owned();
            let refusal = own_limit_or(step, s.stage.clone(), error, |step, stage| {
                Refusal::SubstringPanic { step, stage, field }
            });
            return Err(refusal_at(&pieces[i], refusal, None));
        }
    }
    for piece in &pieces {
        if !piece.text.contains("${") || !crate::substitute::emitted_double_quoted(&piece.text) {
            continue;
        }
        let body = crate::substitute::double_quoted_body(&piece.text);
        let Ok(substituted) = crate::envsubst::eval(&body, &mut |name| env.compile_lookup(name))
        else {
            continue;
        };
        if !crate::substitute::double_quoted_decodes(&substituted) {
            return Err(refusal_at(
                piece,
                Refusal::SubstitutedStep {
                    step,
                    stage: s.stage.clone(),
                    field: piece.field.to_owned(),
                    text: substituted,
                },
                None,
            ));
        }
    }
    Ok(Some(env))
}

/// The JSON keys of go-vela/server v0.28.2's `pipeline.Container`
/// (`compiler/types/pipeline/container.go` lines 34–59): the only keys of a compiled
/// build's container that Go's decoder keeps (it matches them without regard to case
/// and drops the others), so the only ones the worker substitutes.
pub(crate) const CONTAINER_JSON_KEYS: &[&str] = &[
    "id",
    "commands",
    "detach",
    "directory",
    "entrypoint",
    "environment",
    "exit_code",
    "image",
    "name",
    "needs",
    "networks",
    "number",
    "ports",
    "privileged",
    "pull",
    "ruleset",
    "secrets",
    "artifacts",
    "ulimits",
    "volumes",
    "user",
    "report_as",
    "id_request",
    "git",
];

/// The first string of a container (other than `image` and `pull`, which
/// [`Reader::container`] substitutes on their own) that the worker cannot substitute:
/// its key and node, and envsubst's error (a parse error, which fails the container
/// with "unable to substitute container configuration", or
/// [`crate::envsubst::SubstError::NegativeLength`], on which the worker panics).
/// go-vela/worker v0.28.1 builds on go-vela/server v0.28.2, whose
/// `Container.Substitute` (`compiler/types/pipeline/container.go` lines 341–428, commit
/// 5742c386 "use struct walk for Substitute instead of JSON marshal") walks the
/// container's fields and runs `envsubst.Eval` on each string on its own, with the
/// container's environment: the strings of lists, struct fields and map values, never
/// a map's keys. Only the keys in `known` are read (the container's fields: Go drops
/// the others; compared without regard to ASCII case when `compiled_build`, as
/// `encoding/json` does). With `compiled` (a step of pipeline source), each string is
/// first substituted as the compiler does it, with `env`: `$${ARR[@]}` is `${ARR[@]}`
/// by then, which the worker cannot parse. A list `environment` (`KEY=value` items)
/// is a map by then: only the value is substituted. Errors of pullcheck's own bounds
/// are not the worker's and give `None`.
pub(crate) fn worker_substitution_error(
    r: &mut Reader<'_>,
    node: Reached,
    env: &crate::substitute::Env,
    compiled: bool,
    known: &[&str],
    compiled_build: bool,
) -> Result<Option<(String, Reached, crate::envsubst::SubstError)>, InputError> {
    for (key, value) in r.entries(node)? {
        let is_known = known.iter().any(|k| {
            if compiled_build {
                k.eq_ignore_ascii_case(&key)
            } else {
                *k == key
            }
        });
        // A source step's `template` is the compiler's to expand, no container field.
        if !is_known
            || key == "template"
            || key.eq_ignore_ascii_case("image")
            || key.eq_ignore_ascii_case("pull")
        {
            continue;
        }
        let env_list = key == "environment" && matches!(r.doc.value(value.id), Value::Seq(_));
        let mut own = Vec::new();
        if key == "parameters" && !compiled_build && r.doc.is_map(value.id) {
            // Each parameter is one environment value (`PARAMETER_<KEY>`, server
            // v0.28.2 `compiler/native/environment.go` lines 119–130, `api.ToString`): a
            // list or mapping is one text by then (a list's items joined with `,`).
            for (_, parameter) in r.entries(value)? {
                let mut items = Vec::new();
                collect_pieces(r, parameter, "container", None, false, &mut items)?;
                let text = items
                    .iter()
                    .map(|p| p.text.as_str())
                    .collect::<Vec<_>>()
                    .join(",");
                if let Some(first) = items.into_iter().next() {
                    own.push(Piece { text, ..first });
                }
            }
        } else {
            collect_pieces(r, value, "container", None, false, &mut own)?;
        }
        for piece in own {
            let mut text = if compiled && piece.text.contains('$') {
                // The compiler's own failure is a refusal, made before.
                crate::envsubst::eval(&piece.text, &mut |name| env.compile_lookup_stand_in(name))
                    .unwrap_or_default()
            } else {
                piece.text
            };
            if env_list && let Some((_, value)) = text.split_once('=') {
                text = value.to_owned();
            }
            if !text.contains('$') {
                continue;
            }
            let outcome = match crate::envsubst::Template::parse_at(&text) {
                Err((error, _)) => Err(error),
                Ok(template) => template
                    .eval(&mut |name| env.worker_lookup(name))
                    .map(|_| ()),
            };
            match outcome {
                Err(error) if !error.is_own_limit() => {
                    return Ok(Some((key, piece.node, error)));
                }
                _ => {}
            }
        }
    }
    Ok(None)
}

/// [`Refusal::SubstitutionLimit`] when `error` is a bound of pullcheck's own, else
/// `vela(step, stage)`.
fn own_limit_or(
    step: String,
    stage: Option<String>,
    error: crate::envsubst::SubstError,
    vela: impl FnOnce(String, Option<String>) -> Refusal,
) -> Refusal {
    if error.is_own_limit() {
        Refusal::SubstitutionLimit { step, stage, error }
    } else {
        vela(step, stage)
    }
}

/// The strings under `node` (a field of the step), in document order: scalars, and
/// (with `keys`) mapping keys with a `${` (at their value).
fn collect_pieces(
    r: &mut Reader<'_>,
    node: Reached,
    field: &'static str,
    key: Option<String>,
    keys: bool,
    pieces: &mut Vec<Piece>,
) -> Result<(), InputError> {
    /// A node to walk (with the key it is the value of), or a key with a `${` to
    /// take as a string of its own, at its value.
    enum Todo {
        Node(Reached, Option<String>),
        Key(Reached, String),
    }
    let mut todo = vec![Todo::Node(node, key)];
    let mut seen = 0;
    while let Some(next) = todo.pop() {
        seen += 1;
        if seen > MAX_SCALARS {
            break;
        }
        let (node, key) = match next {
            Todo::Key(value, text) => {
                pieces.push(Piece {
                    node: value,
                    text,
                    plain: false,
                    field,
                    key: None,
                });
                continue;
            }
            Todo::Node(node, key) => (node, key),
        };
        match r.doc.value(node.id) {
            Value::Scalar { text, plain, .. } => pieces.push(Piece {
                node,
                text: text.clone(),
                plain: *plain,
                field,
                key,
            }),
            Value::Seq(items) => {
                let items = items.clone();
                todo.extend(
                    items
                        .into_iter()
                        .rev()
                        .map(|i| Todo::Node(r.doc.reach(node, None, i), None)),
                );
            }
            Value::Map(_) => {
                let entries = r.entries(node)?;
                for (k, value) in entries.into_iter().rev() {
                    let has_expression = keys && k.contains("${");
                    todo.push(Todo::Node(value, Some(k.clone())));
                    if has_expression {
                        todo.push(Todo::Key(value, k));
                    }
                }
            }
            Value::Null | Value::Alias(_) => {}
        }
    }
    Ok(())
}

/// The templates: each one's name, `type` node and type in order, and by name (the
/// last definition wins, as `mapFromTemplates` builds it): source, `type` node, type.
struct Templates {
    all: Vec<(String, Option<Reached>, String)>,
    by_name: HashMap<String, (String, Option<Reached>, String)>,
    /// By name (the last definition wins): the `format` node and the format.
    formats: HashMap<String, (Option<Reached>, String)>,
}

fn templates(r: &mut Reader<'_>, root: Reached) -> Result<Templates, InputError> {
    let mut out = Templates {
        all: Vec::new(),
        by_name: HashMap::new(),
        formats: HashMap::new(),
    };
    for (i, t) in r
        .list(root, "templates", "templates")?
        .into_iter()
        .enumerate()
    {
        // The decoder refused an item of another type; a null one is left.
        if !r.doc.is_map(t.id) {
            return Err(r.refuse(
                t,
                Refusal::NullTemplate {
                    field: format!("templates[{i}]"),
                },
            ));
        }
        let name = r.text(t, "name")?.unwrap_or_default();
        let source = r.text(t, "source")?.unwrap_or_default();
        let type_node = r.get_set(t, "type")?;
        let template_type = type_node
            .and_then(|n| r.doc.text(n.id))
            .unwrap_or_default()
            .to_owned();
        let format_node = r.get_set(t, "format")?;
        let format = format_node
            .and_then(|n| r.doc.text(n.id))
            .unwrap_or_default()
            .to_owned();
        out.formats.insert(name.clone(), (format_node, format));
        out.all
            .push((name.clone(), type_node, template_type.clone()));
        out.by_name.insert(name, (source, type_node, template_type));
    }
    Ok(out)
}

/// A stage's `needs` as Vela's `raw.StringSlice` reads it: a list of strings or one.
fn needs(r: &mut Reader<'_>, stage: Reached) -> Result<Vec<String>, InputError> {
    let Some(node) = r.get_set(stage, "needs")? else {
        return Ok(Vec::new());
    };
    if let Some(text) = r.doc.text(node.id) {
        return Ok(vec![text.to_owned()]);
    }
    Ok(r.doc
        .items(node.id)
        .unwrap_or_default()
        .iter()
        .filter_map(|&i| r.doc.text(i).map(str::to_owned))
        .collect())
}

/// `getTemplate`'s types (case-insensitive).
fn supported_type(t: &str) -> bool {
    t.eq_ignore_ascii_case("github") || t.eq_ignore_ascii_case("file")
}

/// Whether a container's own fields decode: a mapping whose `name`, `image` and `pull`
/// are scalars and whose `template` is a mapping. One that does not is already a
/// [`crate::Disposition::Invalid`] use (its image stays in the report, as
/// docs/reasons.md's `invalid_container` says), and is left out of the checks here;
/// its `environment` is checked all the same.
fn decodes(r: &mut Reader<'_>, node: Reached) -> Result<bool, InputError> {
    if !r.doc.is_map(node.id) {
        return Ok(false);
    }
    if let Some(env) = r.get_set(node, "environment")? {
        r.check_environment(env)?;
    }
    for key in ["name", "image", "pull"] {
        if let Some(v) = r.get_set(node, key)?
            && r.doc.text(v.id).is_none()
        {
            return Ok(false);
        }
    }
    if let Some(t) = r.get_set(node, "template")?
        && !r.doc.is_map(t.id)
    {
        return Ok(false);
    }
    Ok(true)
}

/// The `raw.StringSlice` fields of a container or stage (`commands`, `entrypoint`,
/// `ports`, `needs`), as its `UnmarshalYAML` takes them: a scalar, or a list of
/// scalars; a mapping, or a list with a mapping or a list in it (`- echo foo:` is a
/// mapping), fails the decoding of the whole pipeline ("unable to unmarshal into
/// StringSlice").
fn string_slices(
    r: &mut Reader<'_>,
    node: Reached,
    path: &str,
    keys: &[&str],
) -> Result<(), InputError> {
    for key in keys {
        let Some(v) = r.get_set(node, key)? else {
            continue;
        };
        let bad = match r.doc.value(v.id) {
            Value::Map(_) => Some((v, format!("{path}.{key}"))),
            Value::Seq(items) => items.iter().enumerate().find_map(|(i, &item)| {
                let item = r.doc.reach(v, None, item);
                matches!(r.doc.value(item.id), Value::Map(_) | Value::Seq(_))
                    .then(|| (item, format!("{path}.{key}[{i}]")))
            }),
            _ => None,
        };
        if let Some((at, field)) = bad {
            let found = r.doc.kind_name(at.id).to_owned();
            return Err(r.refuse(
                at,
                Refusal::WrongType {
                    field,
                    expected: "string",
                    found,
                    value: None,
                    json: false,
                },
            ));
        }
    }
    Ok(())
}

/// One step, decoded; `None` when it does not ([`decodes`]).
fn step(
    r: &mut Reader<'_>,
    node: Reached,
    path: &str,
    stage: Option<String>,
) -> Result<Option<Step>, InputError> {
    if !decodes(r, node)? {
        return Ok(None);
    }
    string_slices(r, node, path, &["commands", "entrypoint"])?;
    let template = match r.get_set(node, "template")? {
        Some(t) => match r.get_set(t, "name")? {
            Some(n) => r
                .doc
                .text(n.id)
                .filter(|s| !s.is_empty())
                .map(|s| (s.to_owned(), n)),
            None => None,
        },
        None => None,
    };
    let mut s = plain(r, node)?;
    s.stage = stage;
    s.template = template;
    Ok(Some(s))
}

/// A container's name and whether every build keeps it.
fn plain(r: &mut Reader<'_>, node: Reached) -> Result<Step, InputError> {
    let name_node = r.get_set(node, "name")?;
    Ok(Step {
        node,
        name: name_node.and_then(|n| r.doc.text(n.id)).map(str::to_owned),
        name_node,
        stage: None,
        template: None,
        always_kept: r.always_kept(node)?,
        substituted: None,
    })
}

/// `name` and `image` of a service or secret origin.
fn required(r: &mut Reader<'_>, node: Reached, container: ContainerKind) -> Result<(), InputError> {
    let Some(name) = r.text(node, "name")? else {
        return Err(r.refuse(node, Refusal::NoName { container }));
    };
    if r.text(node, "image")?.is_none() {
        let at = r.get(node, "image")?.unwrap_or(node);
        return Err(r.refuse(
            at,
            Refusal::NoImage {
                container,
                name,
                template: None,
            },
        ));
    }
    Ok(())
}

/// `validateYAMLSteps` for one step.
fn validate_step(r: &mut Reader<'_>, s: &Step) -> Result<(), InputError> {
    let Some(name) = s.name.clone().filter(|n| !n.is_empty()) else {
        return Err(r.refuse(
            s.node,
            Refusal::NoName {
                container: ContainerKind::Step,
            },
        ));
    };
    if r.text(s.node, "image")?.is_none() {
        let at = r.get(s.node, "image")?.unwrap_or(s.node);
        return Err(r.refuse(
            at,
            Refusal::NoImage {
                container: ContainerKind::Step,
                name,
                template: s.template.as_ref().map(|t| t.0.clone()),
            },
        ));
    }
    if CLONE_OR_INIT.contains(&name.as_str()) || s.template.is_some() {
        return Ok(());
    }
    for key in ["commands", "environment", "parameters", "secrets"] {
        // `commands` and `secrets` are `raw.StringSlice`-like: a lone string, even
        // `""`, decodes as a one-item list, so it counts.
        // A list's null items are dropped (go-yaml v3.0.4 decode.go:749-759): `[~]` is
        // empty.
        if let Some(v) = r.get_set(s.node, key)?
            && (match r.doc.value(v.id) {
                Value::Seq(items) => items.iter().any(|&i| !r.doc.is_null(i)),
                _ => r.non_empty(v),
            } || (key != "environment" && key != "parameters" && r.doc.text(v.id).is_some()))
        {
            return Ok(());
        }
    }
    if let Some(v) = r.get_set(s.node, "detach")?
        && yaml_v3_bool(r, v) == Some(true)
    {
        return Ok(());
    }
    Err(r.refuse(s.node, Refusal::NoCommands { step: name }))
}

/// `validatePipelineContainers`' name check: the key is `<stage>_<name>`; a name both
/// of whose containers every build keeps is refused, another pair warned about.
fn duplicates(
    r: &mut Reader<'_>,
    containers: &[Step],
    expanded: bool,
    container: ContainerKind,
) -> Result<(), InputError> {
    let mut seen: HashMap<String, &Step> = HashMap::new();
    // `report_as` → the step that reports as it (steps kept by every build).
    let mut reports: HashMap<String, String> = HashMap::new();
    let mut limits = Limits::default();
    let mut previous_stage: Option<&Option<String>> = None;
    for s in containers {
        if expanded && s.template.is_some() {
            continue;
        }
        // Vela checks the counts once each call has gone through its slice: after
        // the steps, after each stage's steps.
        if previous_stage.is_some_and(|p| p != &s.stage) {
            limits.check(r)?;
        }
        previous_stage = Some(&s.stage);
        // The compiler substitutes each step (its name and `report_as` too) before
        // `ValidatePipeline` compares them (compile.go `SubstituteSteps`, then
        // validate.go), with the step's environment: names are compared as
        // substituted (`build-${GOOS}` per `GOOS`). A `${` still in a name is one the
        // compiler leaves as written (an unknown variable is `${NAME}`, a `$${`
        // is `${`) or a server variable (`VELA_BUILD_NUMBER`), whose value is the same
        // for every step and wins over the step's own: equal names stay equal.
        let name = match &s.substituted {
            Some((name, _)) => name,
            None => &s.name,
        };
        let Some(name) = name else { continue };
        if CLONE_OR_INIT.contains(&name.as_str()) {
            continue;
        }
        let key = format!("{}_{name}", s.stage.as_deref().unwrap_or_default());
        match seen.get(&key) {
            Some(first) if first.always_kept && s.always_kept => {
                let first = first
                    .name_node
                    .and_then(|n| r.pos(n))
                    .map(|p| (p.line, p.column));
                return Err(r.refuse(
                    s.name_node.unwrap_or(s.node),
                    Refusal::DuplicateName {
                        container,
                        name: name.clone(),
                        stage: s.stage.clone(),
                        first,
                    },
                ));
            }
            Some(_) => {
                let at = r.loc(s.name_node.unwrap_or(s.node));
                r.warnings.push(format!(
                    "{at}: the name `{name}` is used twice; Vela refuses the build (\"step \
                     `{name}` is already defined\") when the rulesets keep both"
                ));
            }
            None => {
                seen.insert(key, s);
            }
        }
        if container == ContainerKind::Step
            && s.always_kept
            && let Some(report_as) = match &s.substituted {
                Some((_, report_as)) => report_as.clone(),
                None => r.text(s.node, "report_as")?,
            }
            .filter(|t| !t.is_empty())
        {
            // A `${` left in it is the same for every step, as in the name.
            if let Some(first) = reports.get(&report_as) {
                let at = r.get_set(s.node, "report_as")?.unwrap_or(s.node);
                return Err(r.refuse(
                    at,
                    Refusal::DuplicateReportAs {
                        report_as,
                        step: name.clone(),
                        targeted_by: first.clone(),
                    },
                ));
            }
            reports.insert(report_as, name.clone());
            limits.report_as += 1;
            if limits.report_as == LIMIT + 1 {
                let at = r.get_set(s.node, "report_as")?.unwrap_or(s.node);
                limits.first_over.get_or_insert((
                    at,
                    Refusal::ReportAsLimit {
                        step: name.clone(),
                        stage: s.stage.clone(),
                        limit: LIMIT,
                    },
                ));
            }
        }
        if container == ContainerKind::Step && s.always_kept {
            limits.git_token(r, s, name)?;
        }
    }
    limits.check(r)
}

/// `constants.ReportStepStatusLimit`, `GitTokenRepoLimit` and `GitTokenRequestLimit`
/// (go-vela/server v0.28.8 `constants/limit.go`): all three are 10.
const LIMIT: usize = 10;

/// The counts `validatePipelineContainers` keeps over steps kept by every build (one
/// pair of counters for `steps:`, another across all stages), and the first refusal
/// they reach, which Vela returns once the slice is gone through. The report count
/// is checked before the git token count, as upstream does.
#[derive(Default)]
struct Limits {
    report_as: usize,
    git_tokens: usize,
    first_over: Option<(Reached, Refusal)>,
    git_over: Option<(Reached, Refusal)>,
}

impl Limits {
    /// A step's `git.token.repositories`: more than [`LIMIT`] is refused at once;
    /// a step with any counts as a token request.
    fn git_token(&mut self, r: &mut Reader<'_>, s: &Step, name: &str) -> Result<(), InputError> {
        let Some(git) = r.get_set(s.node, "git")? else {
            return Ok(());
        };
        let Some(token) = r.get_set(git, "token")? else {
            return Ok(());
        };
        let Some(repos) = r.get_set(token, "repositories")? else {
            return Ok(());
        };
        let counted = r.doc.items(repos.id).map_or(0, <[_]>::len);
        if counted == 0 {
            return Ok(());
        }
        self.git_tokens += 1;
        if counted > LIMIT {
            return Err(r.refuse(
                repos,
                Refusal::GitTokenRepositories {
                    step: name.to_owned(),
                    stage: s.stage.clone(),
                    limit: LIMIT,
                    counted,
                },
            ));
        }
        if self.git_tokens == LIMIT + 1 {
            self.git_over.get_or_insert((
                repos,
                Refusal::GitTokenLimit {
                    step: name.to_owned(),
                    stage: s.stage.clone(),
                    limit: LIMIT,
                },
            ));
        }
        Ok(())
    }

    /// The refusal a count has reached, if any.
    fn check(&mut self, r: &Reader<'_>) -> Result<(), InputError> {
        match self.first_over.take().or_else(|| self.git_over.take()) {
            Some((at, refusal)) => Err(r.refuse(at, refusal)),
            None => Ok(()),
        }
    }
}
