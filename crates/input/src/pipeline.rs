//! Where the containers of a pipeline are, in both layouts.
//!
//! - **Vela source** (`.vela.yml`): `steps[]`, `stages.<name>.steps[]` (a mapping, read in
//!   file order), `services[]`, `secrets[].origin`.
//! - **Compiled `Build`** (what a worker receives; JSON, decoded first as the worker's
//!   encoding/json decodes it, [`crate::gojson`], or YAML from `check FILE`): `steps[]`,
//!   `stages[] {name, steps[]}` (a list), `services[]`, `secrets[].origin` (a container or
//!   null), plus a top-level `id`.
//!
//! The container keys (`name`, `image`, `pull`) are the same in both layouts. A top-level
//! `id` makes a document a compiled build; without it, it is source, one of `version`,
//! `steps`, `stages`, `services`, `secrets`. The layout decides two things: `stages` as a
//! list is only valid compiled (Vela refuses it in source: "invalid yaml: expected map
//! node for stage"), and whose `${VAR}` substitution applies (the worker's compiled, the
//! compiler's in source, with the pipeline's and the stage's `environment:`).
//!
//! Output order follows upstream's executor "assemble" order: services, stage steps, steps,
//! then secret origins.

use std::collections::HashMap;

use crate::container::{Place, Reader};
use crate::substitute::Mode;
use crate::tree::{Doc, Reached};
use crate::{ContainerKind, ImageUse, InputError};

/// Keys of which a pipeline has at least one (`id` only in a compiled build).
const PIPELINE_KEYS: [&str; 6] = ["id", "version", "steps", "stages", "services", "secrets"];

/// Reads every container of the document, the warnings about it, and how many
/// `render_inline` templates it has (whose steps are not read); `build_env` holds the
/// server-set variables of a running build (empty outside one), which win over the
/// pipeline's own values ([`crate::read_pipeline_in_build`]); `compiled` says the
/// document is a compiled build whatever its keys ([`crate::read_build_read`]). What Vela refuses
/// ([`crate::compiler`]) is an error after the containers are read, so that a shape
/// error of the file itself comes first, as upstream's decoder meets it first.
pub(crate) fn read(
    file: &str,
    doc: &Doc,
    build_env: &HashMap<String, String>,
    compiled: bool,
) -> Result<(Vec<ImageUse>, Vec<String>, usize), InputError> {
    let mut r = Reader::new(doc, file);
    r.build_env = build_env.clone();
    let Some(root) = doc.root else {
        return Err(r.error(
            None,
            "empty: no YAML or JSON document, so no pipeline".to_owned(),
        ));
    };
    if !doc.is_map(root) {
        return Err(r.error(
            doc.pos(root),
            format!(
                "not a pipeline: the top level is a {}; expected a mapping with `version` and \
                 `steps` or `stages` (Vela source) or a compiled build",
                doc.kind_name(root)
            ),
        ));
    }
    let root = doc.reach_root(root);
    // A compiled build is refused with a key written twice anywhere (Vela source only
    // where go-yaml v3 decodes it: `crate::decode`).
    if (compiled || r.get_set(root, "id")?.is_some())
        && let Some(d) = doc.duplicate()
    {
        return Err(r.error(d.pos, d.message.clone()));
    }
    if !compiled {
        ensure_pipeline(&mut r, root)?;
    }
    let mut global_env = HashMap::new();
    let mut gets_global = Global::default();
    if compiled || r.get_set(root, "id")?.is_some() {
        r.mode = Mode::Run;
    } else {
        // `ParseYAML`'s first `yaml.Unmarshal` fails on a `%YAML` other than 1.1.
        if let Some((pos, major, minor)) = doc.yaml_directive
            && (major, minor) != (1, 1)
        {
            let refusal = crate::Refusal::Decode {
                field: String::new(),
                failure: crate::DecodeFailure::YamlVersion { major, minor },
            };
            let mut e = r.error(Some(pos), refusal.to_string());
            e.refusal = Some(Box::new(refusal));
            return Err(e);
        }
        // Vela decodes the whole file before it reads any of it.
        crate::compiler::decode_source(&mut r, root)?;
        if let Some(env) = r.get_set(root, "environment")? {
            global_env.extend(r.env_values(env)?);
        }
        gets_global = Global::of(&mut r, root)?;
        r.expands_templates = r
            .get_set(root, "templates")?
            .and_then(|t| r.doc.items(t.id))
            .is_some_and(|items| !items.is_empty());
    }
    let scope = |gets: bool| {
        if gets {
            global_env.clone()
        } else {
            HashMap::new()
        }
    };
    // The global environment's names that `metadata.environment` keeps from a kind.
    let withheld = |gets: bool| -> Vec<String> {
        if gets {
            Vec::new()
        } else {
            global_env.keys().cloned().collect()
        }
    };
    let place = |kind, fallback_name, stage, gets: bool| Place {
        kind,
        fallback_name,
        stage,
        secret_name: None,
        scope_env: scope(gets),
        withheld: withheld(gets),
    };

    for (i, item) in r
        .list(root, "services", "services")?
        .into_iter()
        .enumerate()
    {
        r.container(
            item,
            place(
                ContainerKind::Service,
                format!("services[{i}]"),
                None,
                gets_global.services,
            ),
        )?;
    }
    stages(
        &mut r,
        root,
        &scope(gets_global.steps),
        &withheld(gets_global.steps),
    )?;
    for (i, item) in r.list(root, "steps", "steps")?.into_iter().enumerate() {
        r.container(
            item,
            place(
                ContainerKind::Step,
                format!("steps[{i}]"),
                None,
                gets_global.steps,
            ),
        )?;
    }
    for (i, secret) in r.list(root, "secrets", "secrets")?.into_iter().enumerate() {
        let Some(origin) = r.get(secret, "origin")? else {
            continue;
        };
        if !r.origin_present(origin)? {
            continue;
        }
        let mut place = place(
            ContainerKind::Secret,
            format!("secrets[{i}].origin"),
            None,
            gets_global.secrets,
        );
        place.secret_name = r.text(secret, "name")?;
        r.container(origin, place)?;
    }
    crate::compiler::check(&mut r, root)?;
    // A `render_inline` pipeline's templates make steps the server expands before it
    // compiles (`compileInline`); they are not read here.
    let mut inline = 0;
    if r.mode == Mode::Compile
        && let Some(metadata) = r.get_set(root, "metadata")?
        && let Some(v) = r.get_set(metadata, "render_inline")?
        && matches!(r.doc.text(v.id), Some("true" | "True" | "TRUE"))
    {
        inline = r.list(root, "templates", "templates")?.len();
    }
    Ok((r.out, r.warnings, inline))
}

/// Whether the document's top level is a mapping with a non-null `id`: a compiled build.
pub(crate) fn has_build_id(doc: &Doc) -> bool {
    let Some(root) = doc.root else {
        return false;
    };
    let mut r = Reader::new(doc, "");
    r.get_set(doc.reach_root(root), "id")
        .is_ok_and(|id| id.is_some())
}

/// Which containers get the pipeline's `environment:`, as `metadata.environment` says
/// (go-vela/server `compiler/native/compile.go`, `Metadata.HasEnvironment`); absent or
/// null, all three (`yaml.Build.UnmarshalYAML` gives that default).
pub(crate) struct Global {
    pub steps: bool,
    services: bool,
    secrets: bool,
}

impl Default for Global {
    fn default() -> Self {
        Global {
            steps: true,
            services: true,
            secrets: true,
        }
    }
}

impl Global {
    pub(crate) fn of(r: &mut Reader<'_>, root: Reached) -> Result<Global, InputError> {
        let Some(metadata) = r.get_set(root, "metadata")? else {
            return Ok(Global::default());
        };
        let Some(list) = r.get_set(metadata, "environment")? else {
            return Ok(Global::default());
        };
        let Some(items) = r.doc.items(list.id) else {
            return Err(r.refuse(
                list,
                crate::Refusal::WrongType {
                    field: "metadata.environment".to_owned(),
                    expected: "list",
                    found: r.doc.kind_name(list.id).to_owned(),
                    value: None,
                    json: false,
                },
            ));
        };
        let names: Vec<&str> = items.iter().filter_map(|&i| r.doc.text(i)).collect();
        Ok(Global {
            steps: names.contains(&"steps"),
            services: names.contains(&"services"),
            secrets: names.contains(&"secrets"),
        })
    }
}

/// Refuses a mapping that is neither a source pipeline nor a compiled build, so that a
/// wrong file is an error rather than an empty, all-clear report.
fn ensure_pipeline(r: &mut Reader<'_>, root: Reached) -> Result<(), InputError> {
    for key in PIPELINE_KEYS {
        if r.get(root, key)?.is_some() {
            return Ok(());
        }
    }
    let message = match (r.text(root, "kind")?, r.get(root, "apiVersion")?) {
        (Some(kind), Some(_)) => format!(
            "not a pipeline: this is a Kubernetes {kind} object; expected a Vela pipeline \
             (`version`, `steps` or `stages`) or a compiled build"
        ),
        _ => "not a pipeline: the top-level mapping has none of `version`, `steps`, \
              `stages`, `services`, `secrets` (Vela source) or `id` (compiled build)"
            .to_owned(),
    };
    Err(r.error_at(root, message))
}

/// `stages`: a mapping of name → stage in source, a list of stages with `name` compiled.
fn stages(
    r: &mut Reader<'_>,
    root: Reached,
    scope_env: &HashMap<String, String>,
    withheld: &[String],
) -> Result<(), InputError> {
    let Some(stages) = r.get_set(root, "stages")? else {
        return Ok(());
    };
    let named: Vec<(String, Reached)> = if r.doc.is_map(stages.id) {
        // `StageSlice.UnmarshalYAML`: the stage's own `name:`, else its key.
        let mut named = Vec::new();
        for (key, stage) in r.entries(stages)? {
            let name = if r.doc.is_map(stage.id) {
                r.text(stage, "name")?.filter(|n| !n.is_empty())
            } else {
                None
            };
            named.push((name.unwrap_or(key), stage));
        }
        named
    } else if r.mode == Mode::Compile && r.doc.items(stages.id).is_some() {
        // go-vela/server `StageSlice.UnmarshalYAML`: source stages are a mapping.
        return Err(r.error_at(
            stages,
            "invalid yaml: expected map node for stage: in a pipeline, `stages` is a mapping \
             of stage names to stages, not a list (a list of stages is the compiled form, \
             which has a top-level `id`)"
                .to_owned(),
        ));
    } else if let Some(items) = r.doc.items(stages.id) {
        let mut named = Vec::with_capacity(items.len());
        for (i, &stage) in items.iter().enumerate() {
            let stage = r.doc.reach(stages, None, stage);
            let name = r
                .text(stage, "name")?
                .unwrap_or_else(|| format!("stages[{i}]"));
            named.push((name, stage));
        }
        named
    } else {
        return Err(r.error_at(
            stages,
            format!(
                "`stages` must be a mapping of stage names to stages, or a list of stages, \
                 found a {}",
                r.doc.kind_name(stages.id)
            ),
        ));
    };
    for (name, stage) in named {
        if r.doc.is_null(stage.id) {
            continue;
        }
        if !r.doc.is_map(stage.id) {
            return Err(r.error_at(
                stage,
                format!(
                    "stage `{name}` must be a mapping with `steps`, found a {}",
                    r.doc.kind_name(stage.id)
                ),
            ));
        }
        let what = format!("stages.{name}.steps");
        let mut stage_env = scope_env.clone();
        if r.mode == Mode::Compile
            && let Some(env) = r.get_set(stage, "environment")?
        {
            stage_env.extend(r.env_values(env)?);
        }
        for (i, item) in r.list(stage, "steps", &what)?.into_iter().enumerate() {
            let place = Place {
                kind: ContainerKind::Step,
                fallback_name: format!("steps[{i}]"),
                stage: Some(name.clone()),
                secret_name: None,
                scope_env: stage_env.clone(),
                withheld: withheld.to_vec(),
            };
            r.container(item, place)?;
        }
    }
    Ok(())
}
