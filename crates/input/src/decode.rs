//! go.yaml.in/yaml/v3 v3.0.4 decoding a pipeline into go-vela/server v0.28.8's
//! `yaml.Build` (`internal/yaml.go` `ParseYAML`), as a schema of its types
//! (`compiler/types/yaml/*.go`, `compiler/types/raw`) walked over the document.
//!
//! What yaml.v3 does, and so what is modelled (`decode.go`):
//! - A value of the wrong type for its Go field is a *type error* (`terror`, "cannot
//!   unmarshal !!int `5` into map[string]interface {}"); decoding goes on, and all of
//!   them are returned together at the end. The first, in document order, is the
//!   refusal here ([`Refusal::WrongType`] with the tag, the value as yaml.v3 quotes it
//!   and the Go type).
//! - An error of a type's own `UnmarshalYAML` that is not a type error (`ulimit nofile
//!   must contain 1 `=` (equal)`, `unable to unmarshal into StringSlice`) stops the
//!   decoding at once, and is the only error returned, whatever type errors came before
//!   ([`Refusal::Decode`]).
//! - The custom types that try one shape and then another (`raw.StringSlice`,
//!   `UlimitSlice`, `VolumeSlice`, `StepSecretSlice`) drop the errors of the first try.
//! - A null (`~`, empty) decodes into any field; unknown keys are ignored.

use crate::container::Reader;
use crate::refusal::DecodeFailure;
use crate::resolve::{Resolved, resolve_node, terror_tag};
use crate::tree::{NodeId, Reached};
use crate::yaml::Value;
use crate::{ContainerKind, InputError, Refusal};

/// A Go type of `yaml.Build`, as the decoder treats it.
enum Ty {
    /// `string`: any scalar.
    Str,
    /// `bool`: `true`/`false` (plain), or YAML 1.1's words ([`crate::compiler::yaml_v3_bool`]).
    Bool,
    /// `int64` or `int` (the Go name): an `!!int` in range, or a `!!float` (truncated).
    Int(&'static str),
    /// `[]string`.
    StrList,
    /// `map[string]string`.
    StrMap,
    /// `map[string]interface {}` (`map[string]any`): any mapping.
    AnyMap,
    /// `raw.StringSlice`: a scalar, or a list of scalars.
    StringSlice,
    /// `raw.StringSliceMap` ([`Reader::check_environment`]).
    Env,
    /// A struct.
    Struct(&'static Struct),
    /// A slice of (pointers to) the element type, with the slice's Go name.
    List(&'static Ty, &'static str),
    /// `ParameterMap`, `map[string]*Parameter`.
    ParameterMap,
    /// `UlimitSlice`.
    Ulimits,
    /// `VolumeSlice`.
    Volumes,
    /// `StepSecretSlice`.
    StepSecrets,
    /// `Ruleset`: `Rules` first, then the advanced struct if that decoded.
    Ruleset,
    /// `StepSlice`, `ServiceSlice`, `SecretSlice`: the list, then a null item refused.
    Containers(&'static Struct, ContainerKind),
    /// `StageSlice`: a mapping of stages, each decoded on its own (`Node.Decode`).
    Stages,
}

/// A Go struct: its name as `reflect.Type.String` prints it, and its YAML keys.
struct Struct {
    go: &'static str,
    fields: &'static [(&'static str, Ty)],
}

static STEP_TEMPLATE: Struct = Struct {
    go: "yaml.StepTemplate",
    fields: &[("name", Ty::Str), ("vars", Ty::AnyMap)],
};
static TOKEN: Struct = Struct {
    go: "yaml.Token",
    fields: &[("repositories", Ty::StrList), ("permissions", Ty::StrMap)],
};
/// `Git` embeds `Token` under the key `token` (`git.go` lines 12–14).
static GIT: Struct = Struct {
    go: "yaml.Git",
    fields: &[("token", Ty::Struct(&TOKEN))],
};
static ARTIFACTS: Struct = Struct {
    go: "yaml.Artifacts",
    fields: &[("paths", Ty::StringSlice)],
};
static ULIMIT: Struct = Struct {
    go: "yaml.Ulimit",
    fields: &[
        ("name", Ty::Str),
        ("soft", Ty::Int("int64")),
        ("hard", Ty::Int("int64")),
    ],
};
static VOLUME: Struct = Struct {
    go: "yaml.Volume",
    fields: &[
        ("source", Ty::Str),
        ("destination", Ty::Str),
        ("access_mode", Ty::Str),
    ],
};
static STEP_SECRET: Struct = Struct {
    go: "yaml.StepSecret",
    fields: &[("source", Ty::Str), ("target", Ty::Str)],
};
/// The anonymous struct of `Rules.UnmarshalYAML` (`ruleset.go` lines 166–184).
static RULES: Struct = Struct {
    go: "struct { Branch raw.StringSlice; Comment raw.StringSlice; Event raw.StringSlice; \
         Path raw.StringSlice; Repo raw.StringSlice; Sender raw.StringSlice; Status \
         raw.StringSlice; Tag raw.StringSlice; Target raw.StringSlice; Label raw.StringSlice; \
         Instance raw.StringSlice; Eval string; Matcher string; Operator string }",
    fields: &[
        ("branch", Ty::StringSlice),
        ("comment", Ty::StringSlice),
        ("event", Ty::StringSlice),
        ("path", Ty::StringSlice),
        ("repo", Ty::StringSlice),
        ("sender", Ty::StringSlice),
        ("status", Ty::StringSlice),
        ("tag", Ty::StringSlice),
        ("target", Ty::StringSlice),
        ("label", Ty::StringSlice),
        ("instance", Ty::StringSlice),
        ("eval", Ty::Str),
        ("matcher", Ty::Str),
        ("operator", Ty::Str),
    ],
};
/// The anonymous struct of `Ruleset.UnmarshalYAML` (`ruleset.go` lines 57–66); `If` and
/// `Unless` are `Rules`, whose own `UnmarshalYAML` decodes [`RULES`].
static RULESET_ADVANCED: Struct = Struct {
    go: "struct { If yaml.Rules; Unless *yaml.Rules; Matcher string; Operator string; \
         Continue bool }",
    fields: &[
        ("if", Ty::Struct(&RULES)),
        ("unless", Ty::Struct(&RULES)),
        ("matcher", Ty::Str),
        ("operator", Ty::Str),
        ("continue", Ty::Bool),
    ],
};
static STEP: Struct = Struct {
    go: "yaml.Step",
    fields: &[
        ("ruleset", Ty::Ruleset),
        ("commands", Ty::StringSlice),
        ("entrypoint", Ty::StringSlice),
        ("secrets", Ty::StepSecrets),
        ("template", Ty::Struct(&STEP_TEMPLATE)),
        ("artifacts", Ty::Struct(&ARTIFACTS)),
        ("ulimits", Ty::Ulimits),
        ("volumes", Ty::Volumes),
        ("image", Ty::Str),
        ("name", Ty::Str),
        ("pull", Ty::Str),
        ("environment", Ty::Env),
        ("parameters", Ty::AnyMap),
        ("detach", Ty::Bool),
        ("privileged", Ty::Bool),
        ("user", Ty::Str),
        ("report_as", Ty::Str),
        ("id_request", Ty::Str),
        ("git", Ty::Struct(&GIT)),
    ],
};
static SERVICE: Struct = Struct {
    go: "yaml.Service",
    fields: &[
        ("image", Ty::Str),
        ("name", Ty::Str),
        ("entrypoint", Ty::StringSlice),
        ("environment", Ty::Env),
        ("ports", Ty::StringSlice),
        ("pull", Ty::Str),
        ("ulimits", Ty::Ulimits),
        ("user", Ty::Str),
        ("ruleset", Ty::Ruleset),
    ],
};
static ORIGIN: Struct = Struct {
    go: "yaml.Origin",
    fields: &[
        ("environment", Ty::Env),
        ("image", Ty::Str),
        ("name", Ty::Str),
        ("parameters", Ty::AnyMap),
        ("secrets", Ty::StepSecrets),
        ("pull", Ty::Str),
        ("ruleset", Ty::Ruleset),
        ("id_request", Ty::Str),
    ],
};
static SECRET: Struct = Struct {
    go: "yaml.Secret",
    fields: &[
        ("name", Ty::Str),
        ("key", Ty::Str),
        ("engine", Ty::Str),
        ("type", Ty::Str),
        ("origin", Ty::Struct(&ORIGIN)),
        ("pull", Ty::Str),
    ],
};
static STAGE: Struct = Struct {
    go: "yaml.Stage",
    fields: &[
        ("environment", Ty::Env),
        ("name", Ty::Str),
        ("needs", Ty::StringSlice),
        ("independent", Ty::Bool),
        ("steps", Ty::Containers(&STEP, ContainerKind::Step)),
    ],
};
static TEMPLATE: Struct = Struct {
    go: "yaml.Template",
    fields: &[
        ("name", Ty::Str),
        ("source", Ty::Str),
        ("format", Ty::Str),
        ("type", Ty::Str),
        ("vars", Ty::AnyMap),
    ],
};
static CANCEL: Struct = Struct {
    go: "yaml.CancelOptions",
    fields: &[
        ("running", Ty::Bool),
        ("pending", Ty::Bool),
        ("default_branch", Ty::Bool),
    ],
};
static METADATA: Struct = Struct {
    go: "yaml.Metadata",
    fields: &[
        ("template", Ty::Bool),
        ("render_inline", Ty::Bool),
        ("clone", Ty::Bool),
        ("environment", Ty::StrList),
        ("auto_cancel", Ty::Struct(&CANCEL)),
    ],
};
static WORKER: Struct = Struct {
    go: "yaml.Worker",
    fields: &[("flavor", Ty::Str), ("platform", Ty::Str)],
};
static PARAMETER: Struct = Struct {
    go: "yaml.Parameter",
    fields: &[
        ("description", Ty::Str),
        ("type", Ty::Str),
        ("required", Ty::Bool),
        ("options", Ty::StringSlice),
        ("min", Ty::Int("int")),
        ("max", Ty::Int("int")),
    ],
};
static DEPLOYMENT: Struct = Struct {
    go: "yaml.Deployment",
    fields: &[
        ("targets", Ty::StringSlice),
        ("parameters", Ty::ParameterMap),
        ("template", Ty::Struct(&STEP_TEMPLATE)),
    ],
};
/// The anonymous struct of `Build.UnmarshalYAML` (`build.go` lines 89–103).
static BUILD: Struct = Struct {
    go: "struct { Version string; Metadata yaml.Metadata; Environment raw.StringSliceMap; \
         Worker yaml.Worker; Secrets yaml.SecretSlice; Services yaml.ServiceSlice; Stages \
         yaml.StageSlice; Steps yaml.StepSlice; Templates yaml.TemplateSlice; Deployment \
         yaml.Deployment; Git yaml.Git }",
    fields: &[
        ("version", Ty::Str),
        ("metadata", Ty::Struct(&METADATA)),
        ("environment", Ty::Env),
        ("worker", Ty::Struct(&WORKER)),
        ("secrets", Ty::Containers(&SECRET, ContainerKind::Secret)),
        ("services", Ty::Containers(&SERVICE, ContainerKind::Service)),
        ("stages", Ty::Stages),
        ("steps", Ty::Containers(&STEP, ContainerKind::Step)),
        (
            "templates",
            Ty::List(&Ty::Struct(&TEMPLATE), "[]*yaml.Template"),
        ),
        ("deployment", Ty::Struct(&DEPLOYMENT)),
        ("git", Ty::Struct(&GIT)),
    ],
};

/// The decoder's state: the type errors met so far (the first is refused).
struct Decoder<'r, 'a> {
    r: &'r mut Reader<'a>,
    type_errors: Vec<InputError>,
}

/// Decodes the pipeline at `root` (a mapping) as `ParseYAML` does; the first type
/// error, or the error that stopped the decoding, is the refusal.
pub(crate) fn decode(r: &mut Reader<'_>, root: Reached) -> Result<(), InputError> {
    let mut d = Decoder {
        r,
        type_errors: Vec::new(),
    };
    d.strukt(root, &BUILD, "")?;
    match d.type_errors.into_iter().next() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

impl Decoder<'_, '_> {
    /// Records yaml.v3's type error for `node` decoded into `go`, naming the node's tag
    /// as `terror` does ([`terror_tag`]: `!foo` for a `!foo [a]`).
    fn terror(&mut self, node: Reached, go: &'static str, path: &str) {
        if self.r.doc.is_null(node.id) {
            return;
        }
        let (found, value) = terror_tag(self.r.doc, node.id);
        let e = self.r.refuse(
            node,
            Refusal::WrongType {
                field: path.to_owned(),
                expected: go,
                found,
                value,
                json: false,
            },
        );
        self.type_errors.push(e);
    }

    /// go-yaml v3's failure on a scalar whose tag its text is not of, or a `!!binary`
    /// that is not base64 ([`resolve_node`]), where it decodes it: it stops the decoding.
    fn check_tag(&self, node: Reached, path: &str) -> Result<(), InputError> {
        match resolve_node(self.r.doc, node.id) {
            Ok(_) => Ok(()),
            Err(failure) => Err(self.fail(node, path, failure)),
        }
    }

    /// The keys of a mapping decoded into a struct or a `map[string]...`: each is decoded
    /// into a `string` first (`mappingStruct`, `mapping`), so a key that is a list or a
    /// mapping is a type error, and a tag its text is not of stops the decoding.
    fn keys(&mut self, node: Reached, path: &str) -> Result<(), InputError> {
        let doc = self.r.doc;
        for &(key, _) in doc.own_entries(node.id).unwrap_or_default() {
            if doc.is_merge_key(key) {
                continue;
            }
            let key = doc.reach(node, None, key);
            match doc.value(key.id) {
                Value::Seq(_) | Value::Map(_) => self.terror(key, "string", path),
                _ => self.check_tag(key, path)?,
            }
        }
        Ok(())
    }

    /// The first key of mapping `node` that go-yaml v3's `mapping` refuses
    /// ([`crate::yaml::Stream::v3_duplicate_entry`]: the same `Kind` and `Value`): the
    /// second key, its `Value`, and the first. The merge keys (`<<`) count as one, as
    /// `ParseYAML` collapses them into one before decoding again (`collapseMergeAnchors`).
    fn duplicate(&self, node: Reached) -> Option<(Reached, String, NodeId)> {
        let doc = self.r.doc;
        let mut merge_seen = false;
        let entries: Vec<(NodeId, NodeId)> = doc
            .own_entries(node.id)?
            .iter()
            .copied()
            .filter(|&(k, _)| !doc.is_merge_key(k) || !std::mem::replace(&mut merge_seen, true))
            .collect();
        let (second, first) = doc.v3_duplicate_entry(&entries)?;
        Some((
            doc.reach(node, None, second),
            doc.v3_identity(second).1.to_owned(),
            first,
        ))
    }

    /// go-yaml v3's type error for a key written twice in mapping `node`, which it
    /// decodes ([`Refusal::DuplicateKey`]). True when there is one: `mapping` then
    /// decodes nothing of that mapping (decode.go lines 779–781).
    fn unique_keys(&mut self, node: Reached, path: &str) -> bool {
        let Some((second, key, first)) = self.duplicate(node) else {
            return false;
        };
        let e = self.r.refuse(
            second,
            Refusal::DuplicateKey {
                field: path.to_owned(),
                key,
                first_line: self.r.doc.pos(first).map(|p| p.line),
                environment: false,
            },
        );
        self.type_errors.push(e);
        true
    }

    /// Every scalar under `node`, decoded into an `interface {}` (a parameter's value, a
    /// template's `vars`): the first whose tag its text is not of stops the decoding, and
    /// every mapping's keys are unique. Each node is looked at once, however many aliases
    /// name it.
    fn check_tags_under(&mut self, node: Reached, path: &str) -> Result<(), InputError> {
        let doc = self.r.doc;
        let mut seen = std::collections::HashSet::new();
        let mut stack = vec![node];
        while let Some(n) = stack.pop() {
            if !seen.insert(doc.resolve(n.id)) {
                continue;
            }
            match doc.value(n.id) {
                Value::Scalar { .. } => self.check_tag(n, path)?,
                Value::Seq(items) => {
                    stack.extend(items.iter().rev().map(|&i| doc.reach(n, None, i)));
                }
                Value::Map(entries) => {
                    if self.unique_keys(n, path) {
                        continue;
                    }
                    for &(k, v) in entries.iter().rev() {
                        stack.push(doc.reach(n, None, v));
                        stack.push(doc.reach(n, None, k));
                    }
                }
                Value::Null | Value::Alias(_) => {}
            }
        }
        Ok(())
    }

    /// A failure that stops the decoding.
    fn fail(&self, node: Reached, path: &str, failure: DecodeFailure) -> InputError {
        self.r.refuse(
            node,
            Refusal::Decode {
                field: path.to_owned(),
                failure,
            },
        )
    }

    /// Whether decoding `f` gives no type error; its type errors are dropped, and so is
    /// an error that stopped it (a custom type's first try, whose errors its
    /// `UnmarshalYAML` does not return).
    fn tries(&mut self, f: impl FnOnce(&mut Self) -> Result<(), InputError>) -> bool {
        let before = self.type_errors.len();
        let stopped = f(self).is_err();
        let clean = !stopped && self.type_errors.len() == before;
        self.type_errors.truncate(before);
        clean
    }

    fn decode(&mut self, node: Reached, ty: &Ty, path: &str) -> Result<(), InputError> {
        let doc = self.r.doc;
        if doc.is_null(node.id) {
            return Ok(());
        }
        // A scalar is resolved before it is decoded, unless a custom type's own decoder
        // takes it (and gets a failure as its first try's error).
        let custom = matches!(
            ty,
            Ty::StringSlice
                | Ty::Env
                | Ty::Ulimits
                | Ty::Volumes
                | Ty::StepSecrets
                | Ty::Ruleset
                | Ty::Stages
        );
        if !custom {
            self.check_tag(node, path)?;
        }
        // `!!null x` is null (`prepare`, decode.go line 381).
        if matches!(resolve_node(doc, node.id), Ok(Resolved::Null))
            && matches!(doc.value(node.id), Value::Scalar { .. })
        {
            return Ok(());
        }
        match ty {
            Ty::Str => {
                if !matches!(doc.value(node.id), Value::Scalar { .. }) {
                    self.terror(node, "string", path);
                }
            }
            Ty::Bool => {
                if crate::compiler::yaml_v3_bool(self.r, node).is_none() {
                    self.terror(node, "bool", path);
                }
            }
            Ty::Int(go) => {
                let fits = match doc.value(node.id) {
                    Value::Scalar { .. } => {
                        match resolve_node(doc, node.id).unwrap_or(Resolved::Str) {
                            Resolved::Int(_) => true,
                            Resolved::Uint(u) => i64::try_from(u).is_ok(),
                            // `resolved <= math.MaxInt64`, then truncated (`decode.go` 640).
                            Resolved::Float(f) => f <= i64::MAX as f64,
                            _ => false,
                        }
                    }
                    _ => false,
                };
                if !fits {
                    self.terror(node, go, path);
                }
            }
            Ty::StrList => match doc.items(node.id).map(<[_]>::to_vec) {
                Some(items) => {
                    for (i, item) in items.into_iter().enumerate() {
                        let item = doc.reach(node, None, item);
                        self.decode(item, &Ty::Str, &format!("{path}[{i}]"))?;
                    }
                }
                None => self.terror(node, "[]string", path),
            },
            Ty::StrMap => {
                if !doc.is_map(node.id) {
                    self.terror(node, "map[string]string", path);
                    return Ok(());
                }
                if self.unique_keys(node, path) {
                    return Ok(());
                }
                self.keys(node, path)?;
                for (key, value) in self.r.entries(node)? {
                    self.decode(value, &Ty::Str, &join(path, &key))?;
                }
            }
            Ty::AnyMap => {
                if !doc.is_map(node.id) {
                    self.terror(node, "map[string]interface {}", path);
                    return Ok(());
                }
                self.keys(node, path)?;
                self.check_tags_under(node, path)?;
            }
            Ty::StringSlice => self.string_slice(node, path)?,
            Ty::Env => {
                // `StringSliceMap`'s second try, `map[string]string`, fails on it and the
                // decoder returns that error as its own.
                if let Some((second, key, first)) = self.duplicate(node) {
                    return Err(self.r.refuse(
                        second,
                        Refusal::DuplicateKey {
                            field: path.to_owned(),
                            key,
                            first_line: doc.pos(first).map(|p| p.line),
                            environment: true,
                        },
                    ));
                }
                self.r.check_environment(node)?;
            }
            Ty::Struct(s) => self.strukt(node, s, path)?,
            Ty::List(elem, go) => self.list_of(node, elem, go, path)?,
            Ty::ParameterMap => {
                if !doc.is_map(node.id) {
                    self.terror(node, "yaml.ParameterMap", path);
                    return Ok(());
                }
                if self.unique_keys(node, path) {
                    return Ok(());
                }
                self.keys(node, path)?;
                for (key, value) in self.r.entries(node)? {
                    self.strukt(value, &PARAMETER, &join(path, &key))?;
                }
            }
            Ty::Ulimits => self.ulimits(node, path)?,
            Ty::Volumes => self.volumes(node, path)?,
            Ty::StepSecrets => self.step_secrets(node, path)?,
            Ty::Ruleset => {
                let before = self.type_errors.len();
                self.strukt(node, &RULES, path)?;
                if self.type_errors.len() == before {
                    self.strukt(node, &RULESET_ADVANCED, path)?;
                }
            }
            Ty::Containers(s, kind) => self.containers(node, s, *kind, path)?,
            Ty::Stages => self.stages(node, path)?,
        }
        Ok(())
    }

    /// A slice of `elem` (named `go`): a list whose items decode into `elem`.
    fn list_of(
        &mut self,
        node: Reached,
        elem: &Ty,
        go: &'static str,
        path: &str,
    ) -> Result<(), InputError> {
        let doc = self.r.doc;
        if doc.is_null(node.id) {
            return Ok(());
        }
        self.check_tag(node, path)?;
        match doc.items(node.id).map(<[_]>::to_vec) {
            Some(items) => {
                for (i, item) in items.into_iter().enumerate() {
                    let item = doc.reach(node, None, item);
                    self.decode(item, elem, &format!("{path}[{i}]"))?;
                }
            }
            None => self.terror(node, go, path),
        }
        Ok(())
    }

    /// A struct: a mapping whose known keys decode into their fields, in document order.
    fn strukt(&mut self, node: Reached, s: &'static Struct, path: &str) -> Result<(), InputError> {
        let doc = self.r.doc;
        if doc.is_null(node.id) {
            return Ok(());
        }
        self.check_tag(node, path)?;
        if !doc.is_map(node.id) {
            self.terror(node, s.go, path);
            return Ok(());
        }
        if self.unique_keys(node, path) {
            return Ok(());
        }
        self.keys(node, path)?;
        // `mappingStruct` (decode.go lines 878–946): its own keys in order, each decoded
        // into a string; a second key that names a field already set (an alias of the
        // first's text, a `!!binary` of it) is a type error and its value is not decoded.
        // Then the merged keys it does not have.
        let doc = self.r.doc;
        let mut set: Vec<&str> = Vec::new();
        let mut own: Vec<(String, Reached)> = Vec::new();
        for &(k, v) in doc.own_entries(node.id).unwrap_or_default() {
            if doc.is_merge_key(k) {
                continue;
            }
            let Some(key) = doc.text(k).filter(|_| !doc.is_null(k)) else {
                continue;
            };
            own.push((key.to_owned(), doc.reach(node, None, v)));
            let Some(&(name, _)) = s.fields.iter().find(|(f, _)| *f == key) else {
                continue;
            };
            if set.contains(&name) {
                let e = self.r.refuse(
                    doc.reach(node, None, k),
                    Refusal::FieldSetTwice {
                        field: path.to_owned(),
                        key: name.to_owned(),
                        go: s.go,
                    },
                );
                self.type_errors.push(e);
                own.pop();
            } else {
                set.push(name);
            }
        }
        let own_keys: std::collections::HashSet<String> =
            own.iter().map(|(k, _)| k.clone()).collect();
        let merged: Vec<(String, Reached)> = self
            .r
            .entries(node)?
            .into_iter()
            .filter(|(key, _)| !own_keys.contains(key))
            .collect();
        // A key written again under a name the struct has no field for is ignored.
        let mut decoded = std::collections::HashSet::new();
        for (key, value) in own.into_iter().chain(merged) {
            if !decoded.insert(key.clone()) {
                continue;
            }
            let Some((_, ty)) = s.fields.iter().find(|(k, _)| *k == key) else {
                continue;
            };
            // `pull: {{ .policy }}` is Go template syntax the server expands first (a
            // mapping whose one key is a mapping): the template warning names it.
            if key != "image" && crate::compiler::go_template_braces(self.r, value) {
                continue;
            }
            self.decode(value, ty, &join(path, &key))?;
        }
        Ok(())
    }

    /// The scalar items of a `raw.StringSlice` (a scalar is one item; a null item is
    /// dropped, as go-yaml v3.0.4's `sequence()` keeps only the items that decode and
    /// `null()` does not decode into a `string`, decode.go:554-563 and 749-759), or
    /// `None` when it is neither a scalar nor a list of scalars.
    /// A scalar whose tag its text is not of is no string ([`resolve_node`]), and one
    /// that resolves to null (`!!null ~`) is dropped as a null.
    fn string_items(&self, node: Reached) -> Option<Vec<(Reached, String)>> {
        let doc = self.r.doc;
        let string = |n: Reached| match resolve_node(doc, n.id) {
            Ok(Resolved::Null) => Some(None),
            Ok(_) => doc.text(n.id).map(|t| Some((n, t.to_owned()))),
            Err(_) => None,
        };
        match doc.value(node.id) {
            Value::Scalar { .. } => string(node).map(|s| s.into_iter().collect()),
            Value::Null => Some(Vec::new()),
            Value::Seq(items) => items
                .iter()
                .filter_map(|&i| {
                    let item = doc.reach(node, None, i);
                    match doc.value(item.id) {
                        Value::Scalar { .. } => {
                            string(item).map(|s| s.map(Some)).unwrap_or(Some(None))
                        }
                        Value::Null => None,
                        _ => Some(None),
                    }
                })
                .collect(),
            _ => None,
        }
    }

    /// `raw.StringSlice.UnmarshalYAML` (`raw/slice.go`): a string, else a `[]string`,
    /// else "unable to unmarshal into StringSlice", at the first item that is neither.
    fn string_slice(&mut self, node: Reached, path: &str) -> Result<(), InputError> {
        if self.string_items(node).is_some() {
            return Ok(());
        }
        let doc = self.r.doc;
        let (at, field) = doc
            .items(node.id)
            .and_then(|items| {
                items.iter().enumerate().find_map(|(i, &item)| {
                    let item = doc.reach(node, None, item);
                    let odd = match doc.value(item.id) {
                        Value::Map(_) | Value::Seq(_) => true,
                        Value::Scalar { .. } => resolve_node(doc, item.id).is_err(),
                        _ => false,
                    };
                    odd.then(|| (item, format!("{path}[{i}]")))
                })
            })
            .unwrap_or((node, path.to_owned()));
        Err(self.fail(at, &field, DecodeFailure::StringSlice))
    }

    /// `UlimitSlice.UnmarshalYAML` (`ulimit.go` lines 50–118): `name=soft[:hard]` strings,
    /// else a list of `Ulimit` mappings.
    fn ulimits(&mut self, node: Reached, path: &str) -> Result<(), InputError> {
        let Some(items) = self.string_items(node) else {
            return self.list_of(node, &Ty::Struct(&ULIMIT), "[]*yaml.Ulimit", path);
        };
        for (item, text) in items {
            let parts: Vec<&str> = text.split('=').collect();
            if parts.len() != 2 {
                return Err(self.fail(item, path, DecodeFailure::UlimitEquals { ulimit: text }));
            }
            let limits: Vec<&str> = parts[1].split(':').collect();
            if limits.len() > 2 {
                return Err(self.fail(item, path, DecodeFailure::UlimitColons { ulimit: text }));
            }
            for limit in limits {
                if let Some(failure) = parse_int_failure(limit) {
                    return Err(self.fail(item, path, failure));
                }
            }
        }
        Ok(())
    }

    /// `VolumeSlice.UnmarshalYAML` (`volume.go` lines 49–104): `source[:destination[:mode]]`
    /// strings, else a list of `Volume` mappings.
    fn volumes(&mut self, node: Reached, path: &str) -> Result<(), InputError> {
        let Some(items) = self.string_items(node) else {
            return self.list_of(node, &Ty::Struct(&VOLUME), "[]*yaml.Volume", path);
        };
        for (item, text) in items {
            if text.split(':').count() > 3 {
                return Err(self.fail(item, path, DecodeFailure::VolumeColons { volume: text }));
            }
        }
        Ok(())
    }

    /// `StepSecretSlice.UnmarshalYAML` (`secret.go` lines 233–268): strings, else a list of
    /// `StepSecret` mappings each with a `source` and a `target`.
    fn step_secrets(&mut self, node: Reached, path: &str) -> Result<(), InputError> {
        if self.string_items(node).is_some() {
            return Ok(());
        }
        let list =
            |d: &mut Self| d.list_of(node, &Ty::Struct(&STEP_SECRET), "[]*yaml.StepSecret", path);
        if !self.tries(list) {
            return Err(self.fail(node, path, DecodeFailure::StepSecretSlice));
        }
        let doc = self.r.doc;
        for (i, &item) in doc.items(node.id).unwrap_or_default().iter().enumerate() {
            let item = doc.reach(node, None, item);
            let mut has = |key: &str| -> Result<bool, InputError> {
                Ok(self
                    .r
                    .get(item, key)?
                    .and_then(|v| doc.text(v.id))
                    .is_some_and(|t| !t.is_empty()))
            };
            if !has("source")? || !has("target")? {
                return Err(self.fail(
                    item,
                    &format!("{path}[{i}]"),
                    DecodeFailure::NoSecretSourceOrTarget,
                ));
            }
        }
        Ok(())
    }

    /// `StepSlice`, `ServiceSlice`, `SecretSlice`: the list of structs, then (when it had
    /// no type error) a null item refused ([`Refusal::NullItem`]).
    fn containers(
        &mut self,
        node: Reached,
        s: &'static Struct,
        container: ContainerKind,
        path: &str,
    ) -> Result<(), InputError> {
        let go = match container {
            ContainerKind::Service => "[]*yaml.Service",
            ContainerKind::Secret => "[]*yaml.Secret",
            _ => "[]*yaml.Step",
        };
        let before = self.type_errors.len();
        self.list_of(node, &Ty::Struct(s), go, path)?;
        if self.type_errors.len() > before {
            return Ok(());
        }
        let doc = self.r.doc;
        for (i, &item) in doc.items(node.id).unwrap_or_default().iter().enumerate() {
            let item = doc.reach(node, None, item);
            if doc.is_null(item.id) {
                return Err(self.r.refuse(
                    item,
                    Refusal::NullItem {
                        container,
                        field: format!("{path}[{i}]"),
                    },
                ));
            }
        }
        Ok(())
    }

    /// `StageSlice.UnmarshalYAML` (`stage.go` lines 57–90): each stage decoded on its own;
    /// the first whose decoding has type errors ends it. A `stages:` that is not a
    /// mapping (null aside, which no decoder gets) stops the decoding.
    fn stages(&mut self, node: Reached, path: &str) -> Result<(), InputError> {
        if !self.r.doc.is_map(node.id) {
            return Err(self.fail(node, path, DecodeFailure::StageMap));
        }
        // `StageSlice` reads the mapping's nodes itself, so a stage written twice is two
        // stages of one name, which `ValidatePipeline` refuses.
        if let Some((second, key, _)) = self.duplicate(node) {
            return Err(self.r.refuse(second, Refusal::DuplicateStage { name: key }));
        }
        for (key, stage) in self.r.entries(node)? {
            let before = self.type_errors.len();
            self.strukt(stage, &STAGE, &join(path, &key))?;
            if self.type_errors.len() > before {
                break;
            }
        }
        Ok(())
    }
}

/// strconv.ParseInt(s, 10, 64)'s error, if any.
fn parse_int_failure(s: &str) -> Option<DecodeFailure> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Some(DecodeFailure::ParseInt {
            text: s.to_owned(),
            out_of_range: false,
        });
    }
    s.parse::<i64>().is_err().then(|| DecodeFailure::ParseInt {
        text: s.to_owned(),
        out_of_range: true,
    })
}
