//! One container (step, service or secret origin) → one [`ImageUse`].
//!
//! Shared by both pipeline layouts: a source step and a compiled `Container` carry their
//! image, pull policy and name under the same keys.

use crate::policy::VELA_PULL_VALUES;
use crate::tree::{BUDGET, Budget, Doc, LookupError, NodeId, Pos};
use crate::{ContainerKind, Disposition, ImageUse, InputError, Origin, PullPolicy};

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
}

/// Walks one document, collecting image uses; every lookup spends from one budget.
pub(crate) struct Reader<'a> {
    pub doc: &'a Doc,
    pub file: &'a str,
    budget: Budget,
    pub out: Vec<ImageUse>,
}

impl<'a> Reader<'a> {
    pub fn new(doc: &'a Doc, file: &'a str) -> Reader<'a> {
        Reader {
            doc,
            file,
            budget: Budget::new(BUDGET),
            out: Vec::new(),
        }
    }

    /// `file:line:column`, or just the file when the position is unknown.
    pub fn loc(&self, pos: Option<Pos>) -> String {
        match pos {
            Some(p) => format!("{}:{}:{}", self.file, p.line, p.column),
            None => self.file.to_owned(),
        }
    }

    pub fn error(&self, pos: Option<Pos>, message: String) -> InputError {
        InputError {
            file: Some(self.file.to_owned()),
            line: pos.map(|p| p.line),
            column: pos.map(|p| p.column),
            message,
        }
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
    pub fn get(&mut self, map: NodeId, key: &str) -> Result<Option<NodeId>, InputError> {
        self.doc
            .get(map, key, &mut self.budget)
            .map_err(|e| self.lookup_error(e))
    }

    /// The value of `key`, treating an explicit null like an absent key.
    pub fn get_set(&mut self, map: NodeId, key: &str) -> Result<Option<NodeId>, InputError> {
        Ok(self.get(map, key)?.filter(|&v| !self.doc.is_null(v)))
    }

    /// The string entries of a mapping, merge keys resolved, in file order.
    pub fn entries(&mut self, map: NodeId) -> Result<Vec<(String, NodeId)>, InputError> {
        self.doc
            .entries(map, &mut self.budget)
            .map_err(|e| self.lookup_error(e))
    }

    /// The items of the list under `key` (empty when absent or null). Anything else than a
    /// list is not a pipeline upstream could decode: an [`InputError`] at the value.
    pub fn list(&mut self, map: NodeId, key: &str, what: &str) -> Result<Vec<NodeId>, InputError> {
        let Some(node) = self.get_set(map, key)? else {
            return Ok(Vec::new());
        };
        match self.doc.items(node) {
            Some(items) => {
                self.budget
                    .spend(items.len())
                    .map_err(|e| self.lookup_error(e))?;
                Ok(items.to_vec())
            }
            None => Err(self.error(
                self.doc.pos(node),
                format!(
                    "`{what}` must be a list, found a {}",
                    self.doc.kind_name(node)
                ),
            )),
        }
    }

    /// A non-empty string value of `key`.
    pub fn text(&mut self, map: NodeId, key: &str) -> Result<Option<String>, InputError> {
        Ok(self
            .get(map, key)?
            .and_then(|v| self.doc.text(v))
            .filter(|t| !t.is_empty())
            .map(str::to_owned))
    }

    /// Whether a secret's `origin` counts as present, as upstream's `Origin.Empty` decides
    /// (go-vela/server `compiler/types/yaml/secret.go`): present when it has an
    /// `environment` or `parameters` (even empty ones), a non-empty `image`, `name` or
    /// `pull`, or a non-empty `secrets` list. A compiled origin also counts when it has an
    /// `id`. Anything but a mapping or null counts as present, so that it is reported.
    pub fn origin_present(&mut self, origin: NodeId) -> Result<bool, InputError> {
        if self.doc.is_null(origin) {
            return Ok(false);
        }
        if !self.doc.is_map(origin) {
            return Ok(true);
        }
        for key in ["environment", "parameters"] {
            if self.get_set(origin, key)?.is_some() {
                return Ok(true);
            }
        }
        for key in ["image", "name", "pull", "id"] {
            if let Some(v) = self.get_set(origin, key)?
                && self.doc.text(v) != Some("")
            {
                return Ok(true);
            }
        }
        if let Some(v) = self.get_set(origin, "secrets")?
            && self.doc.items(v).is_none_or(|items| !items.is_empty())
        {
            return Ok(true);
        }
        Ok(false)
    }

    /// Reads one container and records its image use.
    pub fn container(&mut self, node: NodeId, place: Place) -> Result<(), InputError> {
        let doc = self.doc;
        let what = match place.kind {
            ContainerKind::Step => "step",
            ContainerKind::Service => "service",
            ContainerKind::Secret => "secret origin",
            ContainerKind::Image => "image",
            ContainerKind::Container => "container",
        };
        if !doc.is_map(node) {
            let pos = doc.pos(node);
            let message = format!(
                "{}: {what} `{}` is a {}, expected a mapping with `image:`",
                self.loc(pos),
                place.fallback_name,
                doc.kind_name(node)
            );
            let name = place.fallback_name.clone();
            let disposition = Disposition::Invalid(message);
            self.push(
                String::new(),
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
        let image_node = self.get(node, "image")?;
        let template = self.get_set(node, "template")?;
        let pull_node = self.get_set(node, "pull")?;
        let mut problems = Vec::new();
        let mut image_not_text = false;

        let image = match image_node {
            Some(v) if doc.is_null(v) => String::new(),
            Some(v) => match doc.text(v) {
                Some(text) => text.to_owned(),
                None => {
                    image_not_text = true;
                    problems.push(format!(
                        "{}: `image` must be a string, found a {}",
                        self.loc(doc.pos(v)),
                        doc.kind_name(v)
                    ));
                    String::new()
                }
            },
            None => String::new(),
        };
        let pos = image_node.and_then(|v| doc.pos(v)).or(doc.pos(node));

        let policy = match pull_node {
            None => PullPolicy::NotPresent,
            Some(v) => match doc.text(v) {
                Some(text) => PullPolicy::from_vela(text).unwrap_or_else(|| {
                    problems.push(format!(
                        "{}: unknown pull value {text:?} for {what} `{name}`; allowed values: \
                         {VELA_PULL_VALUES}",
                        self.loc(doc.pos(v))
                    ));
                    PullPolicy::NotPresent
                }),
                None => {
                    problems.push(format!(
                        "{}: `pull` of {what} `{name}` must be a string, found a {}; allowed \
                         values: {VELA_PULL_VALUES}",
                        self.loc(doc.pos(v)),
                        doc.kind_name(v)
                    ));
                    PullPolicy::NotPresent
                }
            },
        };

        // Upstream expands a step's template only when the template has a name.
        let template_name = match template {
            Some(t) if doc.is_map(t) => self.text(t, "name")?,
            Some(t) => {
                problems.push(format!(
                    "{}: `template` must be a mapping with `name` and `vars`, found a {}",
                    self.loc(doc.pos(t)),
                    doc.kind_name(t)
                ));
                None
            }
            None => None,
        };

        let disposition = if let Some(template_name) = template_name {
            Disposition::Skip(format!(
                "not checked: uses template {template_name}; its images are known only after \
                 the server expands the template"
            ))
        } else if image == INIT_IMAGE {
            Disposition::Skip(
                "not checked: `#init` is the init step Vela injects, not an image".to_owned(),
            )
        } else {
            if image.is_empty() && !image_not_text {
                let missing = match template {
                    Some(t) if doc.is_map(t) => "has no `image`, and its `template` no `name`",
                    Some(_) => "has no `image`",
                    None => "has neither `image` nor `template`",
                };
                problems.insert(0, format!("{}: {what} `{name}` {missing}", self.loc(pos)));
            }
            if problems.is_empty() {
                Disposition::Check
            } else {
                Disposition::Invalid(problems.join("; "))
            }
        };
        self.push(image, policy, pos, name, &place, disposition);
        Ok(())
    }

    fn push(
        &mut self,
        image: String,
        policy: PullPolicy,
        pos: Option<Pos>,
        name: String,
        place: &Place,
        disposition: Disposition,
    ) {
        self.out.push(ImageUse {
            image,
            policy,
            origin: Origin {
                file: Some(self.file.to_owned()),
                line: pos.map(|p| p.line),
                column: pos.map(|p| p.column),
                kind: place.kind,
                name,
                stage: place.stage.clone(),
            },
            disposition,
        });
    }
}
