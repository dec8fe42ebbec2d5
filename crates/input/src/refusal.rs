//! What Vela's compiler (go-vela/server v0.28.8) refuses in a pipeline, as data.
//!
//! A [`Refusal`] is carried on an [`crate::InputError`] (with the file, line and
//! column of what is refused); its `Display` is the one place it is worded: Vela's own
//! message first (so a user can search for it), then what pullcheck adds. Front ends
//! that need the kind (the service's JSON `refusal`) take the value, never the text.

use std::fmt;

use crate::ContainerKind;

/// Why Vela's compiler refuses a pipeline. Each variant names the upstream check it
/// follows (go-vela/server v0.28.8).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Refusal {
    /// No `version:` (`compiler/native/validate.go` `ValidateYAML`).
    NoVersion,
    /// `version: "legacy"`, refused while parsing (`internal/yaml.go` `ParseYAML`).
    LegacyVersion,
    /// Both `stages:` and `steps:` (`ValidateYAML`).
    StagesAndSteps,
    /// Neither stages, steps nor templates, and no `metadata.render_inline`
    /// (`ValidateYAML`; services alone do not count), as `vela validate` refuses it
    /// (`CompileLite` validates the file as written; a build's `Compile` injects the
    /// `init` step before it validates).
    NothingToRun,
    /// A step that names a template in a `render_inline` pipeline (`ValidateYAML`).
    RenderInlineTemplateStep {
        /// The step's name.
        step: String,
        /// Its stage, for a stage step.
        stage: Option<String>,
    },
    /// A step, service or secret origin without a `name` (`ValidateYAML`).
    NoName {
        /// `step`, `service` or `secret`.
        container: ContainerKind,
    },
    /// A step, service or secret origin without an `image` (`ValidateYAML`); a step
    /// whose `template:` is not expanded because the pipeline has no `templates:` is
    /// one (`ExpandSteps` does nothing without templates).
    NoImage {
        /// `step`, `service` or `secret`.
        container: ContainerKind,
        /// Its name.
        name: String,
        /// The template it names, when it is a template step of a pipeline without
        /// `templates:`.
        template: Option<String>,
    },
    /// A step with no commands, environment, parameters, secrets or template, not
    /// `detach: true`, and not named `clone` or `init` (`ValidateYAML`).
    NoCommands {
        /// The step's name.
        step: String,
    },
    /// A container name used twice, as `ValidatePipeline` counts it after the ruleset
    /// purge: stage steps keyed `<stage>_<name>` across all stages, steps, services
    /// and secret origins each on their own; `clone` and `init` not counted. Only
    /// containers that every build keeps (no ruleset, or one of `status` rules only)
    /// are counted.
    DuplicateName {
        /// `step`, `service` or `secret` (Vela says "step" for all three).
        container: ContainerKind,
        /// The second container's name.
        name: String,
        /// Its stage, for a stage step.
        stage: Option<String>,
        /// Where the first one's `name` is written (line, column); JSON
        /// `{"line": N, "column": N}`.
        #[serde(serialize_with = "line_column")]
        first: Option<(usize, usize)>,
    },
    /// A stage name used twice (`ValidatePipeline`: "stage `x` is already defined").
    DuplicateStage {
        /// The stage's name.
        name: String,
    },
    /// An `environment` whose value for a variable is a mapping or a list, or a
    /// list item without `=` (`compiler/types/raw/map.go` `StringSliceMap`).
    Environment {
        /// The variable, for a mapping's value; `None` for a list item.
        variable: Option<String>,
        /// What was found: `mapping`, `list`, or for a list item `an item without "="`.
        found: String,
    },
    /// A step naming a template that `templates:` does not declare
    /// (`compiler/native/expand.go` `ExpandSteps`).
    MissingTemplate {
        /// The template's name.
        template: String,
        /// The step's name.
        step: String,
    },
    /// A template whose `type` is neither `github` nor `file` (`expand.go`
    /// `getTemplate`; of two templates with one name, the last one counts).
    UnsupportedTemplateType {
        /// The template's name.
        template: String,
        /// Its `type` as written (empty when absent).
        template_type: String,
    },
    /// A stage whose `needs:` names the stage itself (`compiler/native/validate.go`
    /// `validateYAMLStages`).
    StageNeedsItself {
        /// The stage's name (its `name:`, else its key).
        name: String,
    },
    /// Two steps with the same `report_as`, both kept by every build
    /// (`validatePipelineContainers`, after the name check of each step).
    DuplicateReportAs {
        /// The `report_as` value.
        report_as: String,
        /// The second step's name.
        step: String,
        /// The first step's name, which already reports as it.
        targeted_by: String,
    },
    /// A template whose `format` is none of `go`, `golang`, `starlark` (or empty), used
    /// by a step (`compiler/native/expand.go` `mergeTemplate`; of two templates with
    /// one name, the last one counts).
    UnsupportedTemplateFormat {
        /// The template's name.
        template: String,
        /// Its `format` as written.
        template_format: String,
    },
    /// More than `constants.ReportStepStatusLimit` (10) steps with a `report_as`, kept
    /// by every build (`validatePipelineContainers`, clone and init not counted; steps and
    /// stage steps each on their own count, a stage pipeline's across all its stages).
    /// Vela's message prints the counter's address (`%d` of a pointer); this one the
    /// count.
    ReportAsLimit {
        /// The step whose `report_as` is one over the limit.
        step: String,
        /// Its stage, for a stage step.
        stage: Option<String>,
        /// The limit, 10.
        limit: usize,
    },
    /// A step whose `git.token.repositories` lists more than
    /// `constants.GitTokenRepoLimit` (10) repositories (`validatePipelineContainers`).
    GitTokenRepositories {
        /// The step.
        step: String,
        /// Its stage, for a stage step.
        stage: Option<String>,
        /// The limit, 10.
        limit: usize,
        /// How many it lists.
        counted: usize,
    },
    /// More than `constants.GitTokenRequestLimit` (10) steps kept by every build with
    /// `git.token.repositories` (`validatePipelineContainers`, counted as `report_as`
    /// is).
    GitTokenLimit {
        /// The step that is one over the limit.
        step: String,
        /// Its stage, for a stage step.
        stage: Option<String>,
        /// The limit, 10.
        limit: usize,
    },
    /// A `${...}` that drone/envsubst v1.0.3 cannot parse, anywhere in a step or stage
    /// step (the compiler's `SubstituteSteps` runs `envsubst.Eval` over the whole step
    /// re-encoded as YAML: image, commands, environment, parameters, ...; services and
    /// secret origins are not substituted by the compiler). A compiled build's
    /// container that the worker cannot substitute is no refusal: it is that
    /// container's problem (`Disposition::Invalid`).
    Substitution {
        /// The step.
        step: String,
        /// Its stage, for a stage step.
        stage: Option<String>,
        /// envsubst's error (`missing closing brace`, `bad substitution`, ...).
        error: crate::envsubst::SubstError,
    },
    /// Not Vela's refusal but pullcheck's own bound: a step's `${...}` nested more than
    /// [`crate::envsubst::MAX_DEPTH`] deep, or substituted to over
    /// [`crate::envsubst::MAX_OUTPUT`] bytes, or a trim of a value over
    /// [`crate::envsubst::MAX_TRIM`] characters (`error` is `too_deep`, `too_large` or
    /// `trim_too_long`).
    /// Vela's compiler has no such bound; pullcheck reads no further rather than spend
    /// unbounded time or memory, so the file is an input error all the same.
    SubstitutionLimit {
        /// The step.
        step: String,
        /// Its stage, for a stage step.
        stage: Option<String>,
        /// [`crate::envsubst::SubstError::TooDeep`],
        /// [`crate::envsubst::SubstError::TooLarge`] or
        /// [`crate::envsubst::SubstError::TrimTooLong`].
        error: crate::envsubst::SubstError,
    },
    /// A step with a substring of negative length (`${VAR:0:-1}`), on which
    /// drone/envsubst v1.0.3's `toSubstr` (`funcs.go` line 115, `s[pos:pos+length]`)
    /// panics: the compiler's `SubstituteSteps` does not return, and the server answers
    /// HTTP 500 instead of compiling the pipeline. With `VAR` unknown the compiler
    /// substitutes `${VAR}` itself, which panics the same way.
    SubstringPanic {
        /// The step.
        step: String,
        /// Its stage, for a stage step.
        stage: Option<String>,
        /// The step's field with the substring, e.g. `commands`.
        field: String,
    },
    /// A step whose YAML, after the compiler substitutes a value into it, no longer
    /// decodes (`SubstituteSteps`' `yaml.Unmarshal`): `image: app:${TAG}` with `TAG`
    /// `v1: x` reads `image: app:v1: x`.
    SubstitutedStep {
        /// The step.
        step: String,
        /// Its stage, for a stage step.
        stage: Option<String>,
        /// The field the substituted value broke, e.g. `image`.
        field: String,
        /// The text as the compiler would re-read it.
        text: String,
    },
    /// A null item in `steps:` (also a stage's), `services:` or `secrets:` (a `-` with
    /// nothing after it, or `~`): `StepSlice` and `ServiceSlice` `UnmarshalYAML`
    /// refuse it ("invalid step with nil content found"); `SecretSlice.UnmarshalYAML`
    /// dereferences it, so the compile fails.
    NullItem {
        /// `step`, `service` or `secret`.
        container: ContainerKind,
        /// The item's path, e.g. `steps[1]` or `stages.test.steps[0]`.
        field: String,
    },
    /// A key written twice in a mapping that go-yaml v3 decodes (a struct's, a
    /// `map[string]...`'s, any mapping inside a parameter; `decode.go` `mapping` and
    /// `mappingStruct`, `uniqueKeys`: "mapping key \"x\" already defined at line 4", a
    /// type error), at the second key. A key repeated where nothing decodes it (under a
    /// key the Go type has not) is read, as Vela reads it; a repeated `<<` is merged, as
    /// `ParseYAML` collapses it.
    DuplicateKey {
        /// The mapping's path, e.g. `steps[0]`.
        field: String,
        /// The key.
        key: String,
        /// The line of its first place.
        first_line: Option<usize>,
        /// In an `environment:` mapping, whose `raw.StringSliceMap` decoder returns the
        /// error as its own ("unable to unmarshal into StringSliceMap: ..."), which stops
        /// the decoding.
        environment: bool,
    },
    /// A second key of a struct's mapping that names a field an earlier key set: a
    /// different key that decodes to the same name (an alias `*a` of the text `image`,
    /// `!!binary aW1hZ2U=`), which go-yaml v3's `mapping` lets through (decode.go line
    /// 775 compares `Kind` and `Value`) but `mappingStruct` refuses ("line 4: field image
    /// already set in type yaml.Step", decode.go line 924, a type error), at the second key.
    FieldSetTwice {
        /// The mapping's path, e.g. `steps[0]`.
        field: String,
        /// The field's YAML name.
        key: String,
        /// The struct's Go type as `reflect.Type.String` prints it (`yaml.Step`).
        go: &'static str,
    },
    /// A null item in `templates:` (`- ~`): go-yaml v3 decodes it as a nil
    /// `*yaml.Template`, which `mapFromTemplates` (`compiler/native/expand.go` line 442,
    /// called by `Compile` and `CompileLite` alike) dereferences, so the compiler panics
    /// and the server answers HTTP 500.
    NullTemplate {
        /// The item's path, e.g. `templates[1]`.
        field: String,
    },
    /// A field of the wrong type, which the decoder refuses: go.yaml.in/yaml/v3 for
    /// source (`parameters: 5`, `image: [a]`, a step that is not a mapping; its type
    /// error, `decode.go` `terror`: "cannot unmarshal !!int `5` into map\[string\]interface
    /// {}"), encoding/json for a compiled build (`"image": 5`, `"detach": "yes"`).
    WrongType {
        /// The field's path, e.g. `steps[0].image`.
        field: String,
        /// The Go type of the field as the decoder names it: in YAML `reflect.Type`'s
        /// name (`string`, `bool`, `int64`, `[]string`, `map[string]interface {}`,
        /// `yaml.Git`, `[]*yaml.Step`, ...); in JSON the same (`string`, `bool`,
        /// `int32`, `[]string`), or `mapping` for a container that is not an object.
        expected: &'static str,
        /// What was found: in YAML the node's resolved tag as yaml.v3 prints it
        /// (`!!int`, `!!float`, `!!bool`, `!!str`, `!!timestamp`, `!!seq`, `!!map`;
        /// `yes` and `on` are `!!str`); in JSON encoding/json's word (`number`, `bool`,
        /// `string`, `array`, `object`; `number 1.5` for a number that does not fit
        /// an integer field).
        found: String,
        /// For a YAML scalar, its value as yaml.v3 quotes it after the tag (`` `5` ``;
        /// over 10 bytes its first 7 and `...`); absent otherwise.
        #[serde(skip_serializing_if = "Option::is_none")]
        value: Option<String>,
        /// Whether the text is a compiled build's JSON (Go's encoding/json), else YAML.
        json: bool,
    },
    /// An error of a Vela type's own `UnmarshalYAML` that is not a type error: it stops
    /// yaml.v3's decoding at once, and is the only error Vela reports
    /// ("unable to unmarshal yaml: ulimit nofile must contain 1 `=` (equal)").
    Decode {
        /// The field's path, e.g. `steps[0].ulimits`.
        field: String,
        /// Which error, with its values.
        failure: DecodeFailure,
    },
    /// A compiled build's own `environment` that go-vela/server v0.28.8's
    /// `raw.StringSliceMap.UnmarshalJSON` refuses (`raw/map.go` lines 40–91: not a string,
    /// a list of `NAME=value` strings or an object of strings; `null` too), which stops
    /// encoding/json at once: "unable to unmarshal into StringSliceMap".
    StringSliceMap {
        /// The field's path: `environment`.
        field: String,
    },
}

/// The errors of go-vela/server v0.28.8's `UnmarshalYAML` methods that stop decoding
/// (each worded as upstream by `Display`). JSON: `{"error": "ulimit_equals", ...}`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "error", rename_all = "snake_case")]
pub enum DecodeFailure {
    /// `raw.StringSlice`: neither a string nor a list of strings (`raw/slice.go`
    /// line 60: "unable to unmarshal into StringSlice").
    StringSlice,
    /// `UlimitSlice`: a `name=limit` string without exactly one `=` (`ulimit.go` line 61).
    UlimitEquals {
        /// The string as written.
        ulimit: String,
    },
    /// `UlimitSlice`: a limit with more than one `:` (`ulimit.go` line 99).
    UlimitColons {
        /// The string as written.
        ulimit: String,
    },
    /// `UlimitSlice`: a limit that `strconv.ParseInt(s, 10, 64)` refuses.
    ParseInt {
        /// The limit's text.
        text: String,
        /// Digits, but out of `int64`'s range ("value out of range"), else "invalid
        /// syntax".
        out_of_range: bool,
    },
    /// `VolumeSlice`: more than two `:` (`volume.go` line 81).
    VolumeColons {
        /// The string as written.
        volume: String,
    },
    /// `StepSecretSlice`: neither strings nor a list of `{source, target}` mappings
    /// (`secret.go` line 267: "failed to unmarshal StepSecretSlice").
    StepSecretSlice,
    /// `StepSecretSlice`: a mapping without a `source` or a `target` (`secret.go` line
    /// 255: "no secret source or target found").
    NoSecretSourceOrTarget,
    /// go-yaml v3 itself: a scalar with a core tag its text is not of (`!!int alpine`;
    /// `resolve.go` line 151, "yaml: cannot decode !!str `alpine` as a !!int"), where it
    /// is decoded. Within a `raw.StringSlice` that slice's own error is reported instead,
    /// as its `UnmarshalYAML` gets this one as an error.
    Tag {
        /// The tag the text resolves to (`!!str`, `!!int`, ...).
        found: String,
        /// The text, whole.
        text: String,
        /// The tag written (`!!int`, `!!bool`, `!!float`, `!!null`, `!!timestamp`).
        tag: String,
    },
    /// go-yaml v3 itself: a `!!binary` scalar that is not base64 (`decode.go` line 819:
    /// "yaml: !!binary value contains invalid base64 data"), where it is decoded.
    Base64,
    /// `StageSlice.UnmarshalYAML` (`stage.go` line 59): `stages:` that is not a mapping
    /// ("invalid yaml: expected map node for stage"; a list of stages is the compiled
    /// form, which has a top-level `id`).
    StageMap,
    /// go-yaml v3's parser: a `%YAML` directive other than 1.1 on the first document
    /// (`parserc.go` line 1211: "found incompatible YAML document", so `%YAML 1.2`
    /// too), which fails `ParseYAML`'s first `yaml.Unmarshal` ("unable to unmarshal
    /// pipeline version yaml").
    YamlVersion {
        /// The directive's major version.
        major: u64,
        /// Its minor version.
        minor: u64,
    },
}

impl fmt::Display for DecodeFailure {
    /// Upstream's message.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeFailure::StringSlice => f.write_str("unable to unmarshal into StringSlice"),
            DecodeFailure::UlimitEquals { ulimit } => {
                write!(f, "ulimit {ulimit} must contain 1 `=` (equal)")
            }
            DecodeFailure::UlimitColons { ulimit } => {
                write!(f, "ulimit {ulimit} can only contain 1 `:` (colon)")
            }
            DecodeFailure::ParseInt { text, out_of_range } => write!(
                f,
                "strconv.ParseInt: parsing {text:?}: {}",
                if *out_of_range {
                    "value out of range"
                } else {
                    "invalid syntax"
                }
            ),
            DecodeFailure::VolumeColons { volume } => write!(
                f,
                "volume {volume} must contain at least 1 but no more than 2 `:`(colons)"
            ),
            DecodeFailure::StepSecretSlice => f.write_str("failed to unmarshal StepSecretSlice"),
            DecodeFailure::NoSecretSourceOrTarget => {
                f.write_str("no secret source or target found")
            }
            DecodeFailure::Tag { found, text, tag } => {
                write!(f, "yaml: cannot decode {found} `{text}` as a {tag}")
            }
            DecodeFailure::Base64 => {
                f.write_str("yaml: !!binary value contains invalid base64 data")
            }
            DecodeFailure::StageMap => f.write_str("invalid yaml: expected map node for stage"),
            DecodeFailure::YamlVersion { major, minor } => write!(
                f,
                "yaml: found incompatible YAML document (`%YAML {major}.{minor}`; go-yaml v3 \
                 reads only 1.1)"
            ),
        }
    }
}

/// `(line, column)` as `{"line", "column"}` (the shape positions have elsewhere in the
/// JSON), `null` when unknown.
fn line_column<S: serde::Serializer>(
    at: &Option<(usize, usize)>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    use serde::Serialize as _;
    at.map(|(line, column)| crate::LineColumn { line, column })
        .serialize(serializer)
}

/// `stage.step` for a stage step, else `step`.
fn qualified(step: &str, stage: &Option<String>) -> String {
    match stage {
        Some(stage) => format!("{stage}.{step}"),
        None => step.to_owned(),
    }
}

fn kind_word(kind: ContainerKind) -> &'static str {
    match kind {
        ContainerKind::Service => "service",
        ContainerKind::Secret => "secret origin",
        _ => "step",
    }
}

impl fmt::Display for Refusal {
    /// Vela's message (as its compiler words it), then what pullcheck adds.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Refusal::SubstitutionLimit { .. } => "pullcheck does not read this pipeline: ",
            Refusal::SubstringPanic { .. } | Refusal::NullTemplate { .. } => {
                "Vela's compiler fails on this pipeline: "
            }
            _ => "Vela refuses this pipeline: ",
        })?;
        match self {
            Refusal::NoVersion => f.write_str("no \"version:\" YAML property provided"),
            Refusal::LegacyVersion => f.write_str(
                "version 'legacy' is no longer supported, please update your pipeline to use \
                 version '1'",
            ),
            Refusal::StagesAndSteps => f.write_str(
                "stages and steps provided (a pipeline has either `stages:` or `steps:`)",
            ),
            Refusal::NothingToRun => f.write_str("no stages, steps or templates provided"),
            Refusal::RenderInlineTemplateStep { step, stage } => {
                let step = match stage {
                    Some(stage) => format!("{stage}.{step}"),
                    None => step.clone(),
                };
                write!(
                    f,
                    "step {step}: cannot combine render_inline and a step that references a \
                     template"
                )
            }
            Refusal::NoName { container } => {
                write!(f, "no name provided for {}", kind_word(*container))
            }
            Refusal::NoImage {
                container,
                name,
                template,
            } => {
                write!(f, "no image provided for {} {name}", kind_word(*container))?;
                match template {
                    Some(t) => write!(
                        f,
                        " (its `template: {t}` is not expanded: the pipeline has no \
                         `templates:`)"
                    ),
                    None => Ok(()),
                }
            }
            Refusal::NoCommands { step } => write!(
                f,
                "no commands, environment, parameters, secrets or template provided for step \
                 {step}"
            ),
            Refusal::DuplicateName {
                name, stage, first, ..
            } => {
                write!(f, "step `{name}` is already defined")?;
                if let Some(stage) = stage {
                    write!(f, " (in stage `{stage}`, counted as `{stage}_{name}`)")?;
                }
                match first {
                    Some((line, column)) => write!(f, " (first at {line}:{column})"),
                    None => Ok(()),
                }
            }
            Refusal::DuplicateStage { name } => write!(f, "stage `{name}` is already defined"),
            Refusal::Environment { variable, found } => {
                f.write_str("unable to unmarshal into StringSliceMap: ")?;
                match variable {
                    Some(v) => write!(
                        f,
                        "the value of `{v}` is a {found}; an environment value is a string"
                    ),
                    None => write!(f, "{found}; a list environment holds `NAME=value` strings"),
                }
            }
            Refusal::MissingTemplate { template, step } => write!(
                f,
                "missing template source for template {template} in pipeline for step {step}"
            ),
            Refusal::UnsupportedTemplateType {
                template,
                template_type,
            } => write!(
                f,
                "unsupported template type: {template_type} (template `{template}`; the \
                 types are github and file)"
            ),
            Refusal::StageNeedsItself { name } => {
                write!(f, "stage {name} references itself in 'needs' declaration")
            }
            Refusal::DuplicateReportAs {
                report_as,
                step,
                targeted_by,
            } => write!(
                f,
                "report_as to {report_as} for step {step} is already targeted by step \
                 {targeted_by}"
            ),
            Refusal::UnsupportedTemplateFormat {
                template,
                template_format,
            } => write!(
                f,
                "format of {template_format} is unsupported (template `{template}`; the \
                 formats are go, golang and starlark)"
            ),
            Refusal::ReportAsLimit { step, stage, limit } => write!(
                f,
                "report_as is limited to {limit} steps, counted {} (at step {})",
                limit + 1,
                qualified(step, stage)
            ),
            Refusal::GitTokenRepositories {
                step,
                stage,
                limit,
                counted,
            } => write!(
                f,
                "git token repository count for step {} exceeds the limit of {limit} ({counted} \
                 repositories)",
                qualified(step, stage)
            ),
            Refusal::GitTokenLimit { step, stage, limit } => write!(
                f,
                "git token requests are limited to {limit} steps, counted {} (at step {})",
                limit + 1,
                qualified(step, stage)
            ),
            Refusal::Substitution { step, stage, error } => write!(
                f,
                "unable to substitute environment variables: {error} (in step {})",
                qualified(step, stage)
            ),
            Refusal::SubstitutionLimit { step, stage, error } => write!(
                f,
                "step {}: {error}; Vela has no such limit",
                qualified(step, stage)
            ),
            Refusal::SubstringPanic { step, stage, field } => write!(
                f,
                "a `${{VAR:offset:length}}` with a negative length in `{field}` of step {} \
                 panics its substitution (HTTP 500)",
                qualified(step, stage)
            ),
            Refusal::SubstitutedStep {
                step,
                stage,
                field,
                text,
            } => write!(
                f,
                "unable to unmarshal configuration after substitution for step {}: \
                 `{field}: {text}` is not a YAML string",
                qualified(step, stage)
            ),
            Refusal::NullItem { container, field } => match container {
                ContainerKind::Secret => write!(
                    f,
                    "{field} is null (Vela's decoder dereferences a null secret and the \
                     compile fails)"
                ),
                ContainerKind::Service => {
                    write!(f, "invalid service with nil content found ({field})")
                }
                _ => write!(f, "invalid step with nil content found ({field})"),
            },
            Refusal::DuplicateKey {
                field,
                key,
                first_line,
                environment,
            } => {
                f.write_str("unable to unmarshal yaml: ")?;
                if *environment {
                    f.write_str("unable to unmarshal into StringSliceMap: ")?;
                }
                write!(f, "mapping key {key:?} already defined")?;
                if let Some(line) = first_line {
                    write!(f, " at line {line}")?;
                }
                if field.is_empty() {
                    Ok(())
                } else {
                    write!(f, " (at {field})")
                }
            }
            Refusal::FieldSetTwice { field, key, go } => {
                write!(
                    f,
                    "unable to unmarshal yaml: field {key} already set in type {go}"
                )?;
                if field.is_empty() {
                    Ok(())
                } else {
                    write!(f, " (at {field})")
                }
            }
            Refusal::NullTemplate { field } => write!(
                f,
                "{field} is null, and mapFromTemplates dereferences a null template (HTTP 500)"
            ),
            Refusal::WrongType {
                field,
                expected,
                found,
                value,
                json,
            } => {
                if *json {
                    write!(
                        f,
                        "json: cannot unmarshal {found} into Go struct field {} of type \
                         {expected} (at {field})",
                        crate::gojson::go_field(field)
                    )
                } else {
                    write!(f, "unable to unmarshal yaml: cannot unmarshal {found}")?;
                    if let Some(value) = value {
                        write!(f, " {value}")?;
                    }
                    write!(f, " into {expected} (at {field})")
                }
            }
            Refusal::StringSliceMap { field } => {
                write!(f, "unable to unmarshal into StringSliceMap (at {field})")
            }
            Refusal::Decode {
                failure: failure @ DecodeFailure::YamlVersion { .. },
                ..
            } => write!(f, "unable to unmarshal pipeline version yaml: {failure}"),
            Refusal::Decode { field, failure } => {
                write!(f, "unable to unmarshal yaml: {failure} (at {field})")
            }
        }
    }
}
