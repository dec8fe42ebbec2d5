//! A YAML (and so JSON) stream as one arena of positioned nodes, shared by the Vela reader
//! of this crate and the Kubernetes manifest reader of `pullcheck-kube`.
//!
//! Built from `saphyr-parser` events. Architecture invariants:
//! - An alias (`*a`) is a small node of its own, [`Value::Alias`], that names its anchor's
//!   node (a shared index), never a copy of it, so an alias bomb costs no memory. Every
//!   accessor looks through it ([`Stream::value`], [`Stream::text`], ...); only
//!   [`Stream::pos`] tells it apart: an alias is written where the `*a` is. Merge keys
//!   are resolved here, for both readers ([`Stream::walk_merged`],
//!   [`Stream::merged_entries`]), and every walk that follows aliases or merge keys spends
//!   from a [`Budget`] its reader holds, so it costs bounded time too.
//! - Positions say where a value is *used*, which for aliased content is not where it is
//!   written: see [Positions of aliased content](#positions-of-aliased-content).
//! - Nodes live in one `Vec` and refer to each other by index: no recursion to build or
//!   drop, whatever the nesting (which is capped anyway).
//! - An anchor becomes usable when its node is complete, so the tree has no cycles; anchors
//!   are per document.
//! - The parser is not ours: a panic inside it becomes an error.
//! - A key written twice in one mapping (merge keys aside) names both places, as go-yaml v3
//!   (which Vela uses) and kubectl refuse it ([`Stream::duplicate_key`], the one check, which
//!   the manifest deserializer calls too): [`Stream::load_first`] fails on it, and
//!   [`Stream::load_all`] and [`Stream::load_first_keeping_duplicates`] record it on its
//!   [`Document`] so that a caller can still look at the stream before refusing it (the
//!   Vela reader refuses it only where go-yaml v3 decodes the mapping).
//! - [`Stream::load_first`] builds only the first document; the documents after it are only
//!   scanned, so that a caller can say they are not read.
//!
//! # Positions of aliased content
//!
//! A node reached through an alias is written once, in its anchor, but used wherever an alias
//! names it; a reader reports where it is used. The rule, for a node that a reader reaches by
//! walking down from its document's root ([`Reached`]):
//!
//! - The node is *used* at the first alias on the way from the root to it, the node itself
//!   included: for `image: *img`, the `*img`; for a value inside a step written as
//!   `- *stepa`, the `*stepa`; for a value that a mapping takes through a merge key
//!   (`<<: *defaults`, `<<: [*a, *b]`), that `*defaults` (or `*a`, `*b`); for a container
//!   of a list used as `steps: *common` or `containers: *list`, that alias. A node reached
//!   through no alias is used where it is written. [`Stream::used_pos`] gives that
//!   position, [`Stream::written_pos`] where the node itself is written (for an anchored
//!   collection, at its `&a`; for an anchored scalar, at its content).
//! - The *first* alias, because an alias inside an anchor (`&stepa {image: *img}`) is part
//!   of what an outer alias (`- *stepa`) repeats: the outer one is the place in the text
//!   that stands for this use. Two uses of one anchor so have positions of their own; the
//!   several things one alias repeats (the steps of `steps: *common`) share its position,
//!   and readers tell them apart by name.
//! - Image uses (origins) and the errors and invalid uses about a value reached through an
//!   alias are at the use. Their messages also name where the value is written when that is
//!   elsewhere (`file:7:12 (written at 4:17): ...`, or `... (written at 4:17)` after an
//!   error's message), as fixing it means editing the anchor.
//! - A duplicate key is a fault of the text of one mapping, found while loading: its error
//!   names both keys where they are written, whether the mapping is aliased or not (an
//!   aliased key, `*k: v`, is written at its `*k`).
//! - An inline merge (`<<: {image: x}`) or an anchor's own node (`&a {...}`) is no alias: it
//!   is used where it is written.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::panic::{AssertUnwindSafe, catch_unwind};

use saphyr_parser::{Event, Marker, Parser, ScalarStyle};

/// Index of a node in [`Stream::nodes`].
pub type NodeId = usize;

/// Deepest nesting of collections accepted.
pub const MAX_DEPTH: usize = 256;
/// Most nodes accepted in one stream (an alias is one node, however large what it names).
pub const MAX_NODES: usize = 2_000_000;

/// A 1-based line and column (in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pos {
    /// The line, from 1.
    pub line: usize,
    /// The column in characters, from 1.
    pub column: usize,
}

impl Pos {
    fn from_marker(m: &Marker) -> Pos {
        Pos {
            line: m.line().max(1),
            column: m.col() + 1,
        }
    }
}

/// What a node holds.
#[derive(Debug)]
pub enum Value {
    /// `~`, `null`, an empty plain scalar, or JSON `null`.
    Null,
    /// Any other scalar, as written (YAML booleans and numbers included).
    Scalar {
        /// The scalar's text; for a `!!binary` scalar of valid base64, the bytes it
        /// decodes to (as go-yaml v3 decodes it into a string; invalid UTF-8 replaced).
        text: String,
        /// True for an unquoted scalar without a `!!str` or `!!binary` tag (one whose type
        /// is resolved from its text, or from its tag: [`Node::tag`]); false for every
        /// scalar read by [`Stream::load_json`].
        plain: bool,
        /// True for a merge key: a plain `<<` without a tag (or with `!`), or any `<<`
        /// tagged `!!merge` (go-yaml v3's `isMerge`, decode.go line 1016).
        merge: bool,
    },
    /// A sequence: its items in order.
    Seq(Vec<NodeId>),
    /// A mapping: its (key, value) entries as written, merge keys and repeated keys included.
    Map(Vec<(NodeId, NodeId)>),
    /// An alias (`*a`): the node its anchor names, which is never itself an alias. Its
    /// position ([`Node::pos`]) is where the `*a` is written; every accessor of [`Stream`]
    /// but [`Stream::pos`] looks through it, and [`Stream::value`] never returns it.
    Alias(NodeId),
}

/// A node's kind as go-yaml v3's `yaml.Kind` tells it (a document node aside).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum V3Kind {
    /// `ScalarNode` (a null included).
    Scalar,
    /// `AliasNode`.
    Alias,
    /// `SequenceNode`.
    Sequence,
    /// `MappingNode`.
    Mapping,
}

/// One node of the arena.
#[derive(Debug)]
pub struct Node {
    /// What it holds.
    pub value: Value,
    /// Its explicit tag, in go-yaml v3's short form (`shortTag`, resolve.go line 87):
    /// `!!int` for `!!int` or `!<tag:yaml.org,2002:int>`, `!foo` for a local tag;
    /// `None` without one, or for the non-specific `!`, which go-yaml v3 ignores.
    pub tag: Option<String>,
    /// A `!!binary` scalar whose text is not base64 (its text is kept as written):
    /// go-yaml v3 fails where it decodes it ("!!binary value contains invalid base64
    /// data").
    pub bad_base64: bool,
    /// For an alias (`*name`), its name as written: what go-yaml v3 keeps as an alias
    /// node's `Value`.
    pub alias_name: Option<String>,
    /// For a scalar whose text this tree keeps otherwise, the text as written, which
    /// go-yaml v3 keeps as its `Node.Value`: a null's (`~`, `null`, empty), a valid
    /// `!!binary`'s base64. `None` for every other node.
    pub written: Option<String>,
    /// Where the node starts (for a scalar with an anchor or tag, where its content starts;
    /// for an alias, where its `*` is); `None` for nodes read by [`Stream::load_json`].
    pub pos: Option<Pos>,
}

/// A node as a reader reached it, walking down from its document's root: the node, and the
/// first alias on the way, which is where the node is used (see
/// [Positions of aliased content](self#positions-of-aliased-content)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reached {
    /// The node as found: an alias stays an alias (accessors look through it).
    pub id: NodeId,
    /// The first alias on the way from the root to `id`, `id` itself included; `None` when
    /// the node was reached through no alias.
    pub via: Option<NodeId>,
}

/// One document of a stream.
#[derive(Debug, Clone, Default)]
pub struct Document {
    /// Its root node; `None` when the document has no node at all (an empty stream). An
    /// empty document (`---` followed by nothing, or only comments) has a null root.
    pub root: Option<NodeId>,
    /// With [`Stream::load_all`], the first key written twice in one mapping of this
    /// document: at the second, with `duplicate key "k" (first at L:C)` as the message.
    pub duplicate: Option<LoadError>,
}

/// Why a text could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    /// Where, when known.
    pub pos: Option<Pos>,
    /// What is wrong.
    pub message: String,
    /// The parser refused the text (a syntax error, a failure inside the parser, or nesting
    /// too deep), as opposed to well-formed text we refuse (a duplicate key, the node limit).
    pub syntax: bool,
}

/// A YAML stream (or a JSON document) as an arena of nodes.
#[derive(Debug, Default)]
pub struct Stream {
    /// Every node of every document read.
    pub nodes: Vec<Node>,
    /// The documents read, in order: none for an empty stream.
    pub documents: Vec<Document>,
    /// With [`Stream::load_first`], where each non-empty document after the first starts
    /// (its `---`, or its content when it has none). These documents are not read; one that
    /// does not parse is listed too, and ends the scan.
    pub ignored_documents: Vec<Pos>,
    /// The first document's `%YAML` directive: where it is, its major and minor version
    /// (the parser reads any; go-yaml v3 refuses all but 1.1).
    pub yaml_directive: Option<(Pos, u64, u64)>,
}

impl Stream {
    /// Loads the first document of a YAML stream. Later documents are not read, as a reader
    /// that decodes one document (go-yaml's `Unmarshal`) does not read them either; where
    /// they start is kept in [`Stream::ignored_documents`], and a syntax error inside one is
    /// not an error. A key written twice in one mapping is an error.
    ///
    /// # Errors
    /// [`LoadError`] when the text is not YAML, a key is written twice, or a limit
    /// ([`MAX_DEPTH`], [`MAX_NODES`]) is passed.
    pub fn load_first(text: &str) -> Result<Stream, LoadError> {
        Builder::load(text, true, true)
    }

    /// [`Stream::load_first`], but a key written twice in one mapping is recorded on the
    /// document ([`Document::duplicate`], the first one), not an error: for a reader that,
    /// as go-yaml v3 does, refuses it only in the mappings it decodes
    /// ([`Stream::duplicate_key`]).
    ///
    /// # Errors
    /// [`LoadError`] when the text is not YAML or a limit is passed.
    pub fn load_first_keeping_duplicates(text: &str) -> Result<Stream, LoadError> {
        Builder::load(text, true, false)
    }

    /// Loads every document of a YAML stream. A key written twice in one mapping is recorded
    /// on its document ([`Document::duplicate`]), not an error.
    ///
    /// # Errors
    /// [`LoadError`] when the text is not YAML or a limit ([`MAX_DEPTH`], [`MAX_NODES`]) is
    /// passed.
    pub fn load_all(text: &str) -> Result<Stream, LoadError> {
        Builder::load(text, false, false)
    }

    /// Loads JSON as one document without positions, for JSON that the YAML parser refuses.
    /// A key written twice in one object is an error, as in YAML.
    ///
    /// # Errors
    /// [`LoadError`] when the text is not JSON, has a key twice, or has more than
    /// [`MAX_NODES`] nodes.
    pub fn load_json(text: &str) -> Result<Stream, LoadError> {
        let value: Json = serde_json::from_str(text).map_err(|e| {
            let message = if e.classify() == serde_json::error::Category::Data {
                // Ours (a duplicate key): the position goes in the error's own fields.
                let full = e.to_string();
                let at = format!(" at line {} column {}", e.line(), e.column());
                full.strip_suffix(&at).unwrap_or(&full).to_owned()
            } else {
                format!("not valid JSON: {e}")
            };
            LoadError {
                pos: (e.line() > 0).then(|| Pos {
                    line: e.line(),
                    column: e.column().max(1),
                }),
                message,
                syntax: e.classify() != serde_json::error::Category::Data,
            }
        })?;
        let mut stream = Stream::default();
        // serde_json caps nesting at 128, so this recursion is bounded.
        let root = stream.add_json(&value)?;
        stream.documents.push(Document {
            root: Some(root),
            duplicate: None,
        });
        Ok(stream)
    }

    fn add_json(&mut self, value: &Json) -> Result<NodeId, LoadError> {
        let value = match value {
            Json::Null => Value::Null,
            Json::Scalar(s) => json_scalar(s.clone()),
            Json::Array(items) => Value::Seq(
                items
                    .iter()
                    .map(|v| self.add_json(v))
                    .collect::<Result<_, _>>()?,
            ),
            Json::Object(map) => {
                let mut entries = Vec::with_capacity(map.len());
                for (k, v) in map {
                    let key = self.push(json_scalar(k.clone()), None)?;
                    entries.push((key, self.add_json(v)?));
                }
                Value::Map(entries)
            }
        };
        self.push(value, None)
    }

    fn push(&mut self, value: Value, pos: Option<Pos>) -> Result<NodeId, LoadError> {
        if self.nodes.len() >= MAX_NODES {
            return Err(LoadError {
                pos,
                message: format!("too large: more than {MAX_NODES} YAML nodes"),
                syntax: false,
            });
        }
        self.nodes.push(Node {
            value,
            pos,
            tag: None,
            bad_base64: false,
            alias_name: None,
            written: None,
        });
        Ok(self.nodes.len() - 1)
    }

    /// Where the node is written: for an alias, where its `*` is. `None` for nodes read by
    /// [`Stream::load_json`].
    pub fn pos(&self, id: NodeId) -> Option<Pos> {
        self.nodes[id].pos
    }

    /// The node an alias names; any other node itself.
    pub fn resolve(&self, id: NodeId) -> NodeId {
        match self.nodes[id].value {
            Value::Alias(target) => target,
            _ => id,
        }
    }

    /// The explicit tag of the node (through an alias, its anchor's): [`Node::tag`].
    pub fn tag(&self, id: NodeId) -> Option<&str> {
        self.nodes[self.resolve(id)].tag.as_deref()
    }

    /// Whether the node is an alias (`*a`).
    pub fn is_alias(&self, id: NodeId) -> bool {
        matches!(self.nodes[id].value, Value::Alias(_))
    }

    /// What the node holds, through an alias: never [`Value::Alias`].
    pub fn value(&self, id: NodeId) -> &Value {
        &self.nodes[self.resolve(id)].value
    }

    /// A document's root as reached: through no alias (a root cannot be one).
    pub fn reach_root(&self, root: NodeId) -> Reached {
        Reached {
            id: root,
            via: self.is_alias(root).then_some(root),
        }
    }

    /// `child`, found in `parent` (an item of it, or a key or value of one of its entries),
    /// as reached: through `parent`'s alias, else through `merged_via` (the first alias among
    /// the merge keys followed from `parent` to the mapping that holds `child`, if any), else
    /// through `child` itself when it is an alias.
    pub fn reach(&self, parent: Reached, merged_via: Option<NodeId>, child: NodeId) -> Reached {
        Reached {
            id: child,
            via: parent
                .via
                .or(merged_via)
                .or(self.is_alias(child).then_some(child)),
        }
    }

    /// Where a reached node is used: at the first alias on the way to it, else where it is
    /// written. `None` for nodes read by [`Stream::load_json`].
    pub fn used_pos(&self, node: Reached) -> Option<Pos> {
        self.pos(node.via.unwrap_or(node.id))
    }

    /// Where a node's content is written: for an alias, in its anchor.
    pub fn written_pos(&self, id: NodeId) -> Option<Pos> {
        self.pos(self.resolve(id))
    }

    /// The text of a non-null scalar.
    pub fn text(&self, id: NodeId) -> Option<&str> {
        match self.value(id) {
            Value::Scalar { text, .. } => Some(text),
            _ => None,
        }
    }

    /// Whether the node is null.
    pub fn is_null(&self, id: NodeId) -> bool {
        matches!(self.value(id), Value::Null)
    }

    /// Whether the node is a mapping.
    pub fn is_map(&self, id: NodeId) -> bool {
        matches!(self.value(id), Value::Map(_))
    }

    /// Whether the node is a merge key (a plain, untagged `<<`).
    pub fn is_merge_key(&self, id: NodeId) -> bool {
        matches!(self.value(id), Value::Scalar { merge: true, .. })
    }

    /// The items of a sequence.
    pub fn items(&self, id: NodeId) -> Option<&[NodeId]> {
        match self.value(id) {
            Value::Seq(items) => Some(items),
            _ => None,
        }
    }

    /// The entries written in a mapping itself, merge keys and repeated keys included as
    /// they are, in order. `None` when the node is not a mapping.
    pub fn own_entries(&self, id: NodeId) -> Option<&[(NodeId, NodeId)]> {
        match self.value(id) {
            Value::Map(entries) => Some(entries),
            _ => None,
        }
    }
}

/// Work allowance for walks over a stream that follow aliases or merge keys: units spent
/// per mapping visited and entry looked at, shared by a whole read (through `&`, so that
/// walks holding the stream can share it), so that a hostile file ends in bounded time.
#[derive(Debug)]
pub struct Budget(Cell<usize>);

impl Budget {
    /// An allowance of `units`.
    pub fn new(units: usize) -> Budget {
        Budget(Cell::new(units))
    }

    /// Takes `units` from the allowance.
    ///
    /// # Errors
    /// [`LookupError::Exhausted`] when fewer are left (the allowance is then unchanged).
    pub fn spend(&self, units: usize) -> Result<(), LookupError> {
        let left = self
            .0
            .get()
            .checked_sub(units)
            .ok_or(LookupError::Exhausted)?;
        self.0.set(left);
        Ok(())
    }
}

/// Why a walk through merge keys stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookupError {
    /// The [`Budget`] ran out.
    Exhausted,
    /// A `<<` whose value is not a mapping or a list of mappings: at that value, or at the
    /// first alias on the way to it.
    BadMerge(Option<Pos>),
}

/// How a walk treats a mapping that merge keys bring in along several paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Merges {
    /// Visit it on every path, as go-yaml expands merges: a merge bomb (each level merging
    /// the previous one twice) exhausts the budget and is refused. The Vela reader's rule.
    EveryPath,
    /// Visit it once (a second visit adds no key): a merge bomb stays linear. The
    /// Kubernetes manifest reader's rule.
    Once,
}

/// One entry of a mapping after merge keys are resolved ([`Stream::merged_entries`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergedEntry {
    /// The key's text, as the caller's `key` function gave it.
    pub key: String,
    /// The key node.
    pub key_node: NodeId,
    /// The value node.
    pub value: NodeId,
    /// The first alias among the merge keys followed to the mapping that holds the entry;
    /// `None` for the mapping's own entries and for those merged in without an alias.
    pub via: Option<NodeId>,
}

impl Stream {
    /// The mappings whose keys `map` has, in priority order, as the YAML merge type says:
    /// `map` itself, then what its `<<` keys merge in (`<<: *a`, `<<: [*a, *b]`), depth
    /// first, earlier ones before later ones. Calls `visit` on each mapping's own entries
    /// in turn, with the first alias among the merge keys followed to it (`None` for `map`
    /// itself), until it returns `Some`. Spends one unit per mapping visited and one per
    /// item of a merged list; `visit` spends what it looks at. `map` must be a mapping.
    ///
    /// # Errors
    /// [`LookupError::BadMerge`] for a merge of something else than a mapping,
    /// [`LookupError::Exhausted`] when `budget` runs out, or what `visit` returns.
    pub fn walk_merged<T>(
        &self,
        map: NodeId,
        budget: &Budget,
        merges: Merges,
        mut visit: impl FnMut(&[(NodeId, NodeId)], Option<NodeId>) -> Result<Option<T>, LookupError>,
    ) -> Result<Option<T>, LookupError> {
        // (mapping, the first alias on the way to it from `map`).
        let mut stack = vec![(self.resolve(map), None)];
        let mut sources = Vec::new();
        let mut seen = HashSet::new();
        let alias = |id: NodeId| self.is_alias(id).then_some(id);
        // A merge source that is not a mapping, at the first alias on the way to it.
        let bad =
            |via: Option<NodeId>, id: NodeId| LookupError::BadMerge(self.pos(via.unwrap_or(id)));
        while let Some((current, via)) = stack.pop() {
            if merges == Merges::Once && !seen.insert(current) {
                continue;
            }
            budget.spend(1)?;
            let Value::Map(entries) = self.value(current) else {
                return Err(bad(via, current));
            };
            if let Some(found) = visit(entries, via)? {
                return Ok(Some(found));
            }
            sources.clear();
            for &(key, value) in entries {
                if !self.is_merge_key(key) {
                    continue;
                }
                let value_via = via.or(alias(value));
                match self.value(value) {
                    Value::Map(_) => sources.push((self.resolve(value), value_via)),
                    Value::Seq(items) => {
                        budget.spend(items.len())?;
                        for &item in items {
                            let item_via = value_via.or(alias(item));
                            if !self.is_map(item) {
                                return Err(bad(item_via, item));
                            }
                            sources.push((self.resolve(item), item_via));
                        }
                    }
                    _ => return Err(bad(value_via, value)),
                }
            }
            stack.extend(sources.iter().rev());
        }
        Ok(None)
    }

    /// The entries of mapping `map`, merge keys resolved ([`Stream::walk_merged`]), each
    /// key once, in order: its own keys as written (a repeated key in its first place,
    /// with its last value), then merged keys it does not have, in merge order. `key`
    /// gives a key node's text, or `None` for a key to leave out. Spends one unit per
    /// entry looked at. Empty when `map` is not a mapping.
    ///
    /// # Errors
    /// As [`Stream::walk_merged`].
    pub fn merged_entries(
        &self,
        map: NodeId,
        budget: &Budget,
        merges: Merges,
        key: impl Fn(NodeId) -> Option<String>,
    ) -> Result<Vec<MergedEntry>, LookupError> {
        let mut out: Vec<MergedEntry> = Vec::new();
        if !self.is_map(map) {
            return Ok(out);
        }
        let mut seen: HashMap<String, usize> = HashMap::new();
        self.walk_merged::<()>(map, budget, merges, |entries, via| {
            budget.spend(entries.len())?;
            let mut own: HashMap<String, usize> = HashMap::new();
            for &(k, v) in entries {
                if self.is_merge_key(k) {
                    continue;
                }
                let Some(text) = key(k) else {
                    continue;
                };
                if let Some(&i) = own.get(&text) {
                    out[i].key_node = k;
                    out[i].value = v;
                } else if !seen.contains_key(&text) {
                    own.insert(text.clone(), out.len());
                    out.push(MergedEntry {
                        key: text,
                        key_node: k,
                        value: v,
                        via,
                    });
                }
            }
            seen.extend(own);
            Ok(None)
        })?;
        Ok(out)
    }

    /// The first key of a mapping's own `entries` written again in them (merge keys
    /// aside), as an error at the second naming the first: `duplicate key "k" (first at
    /// L:C)` ([`Stream::duplicate_entry`]).
    pub fn duplicate_key(&self, entries: &[(NodeId, NodeId)]) -> Option<LoadError> {
        let (second, first) = self.duplicate_entry(entries)?;
        Some(LoadError {
            pos: self.nodes[second].pos,
            message: duplicate_message(self.text(second)?, self.nodes[first].pos),
            syntax: false,
        })
    }

    /// The node as go-yaml v3 keeps it (not through an alias): its `Kind` and `Value`. A
    /// scalar's `Value` is its text as written (a `!!binary`'s base64, a null's `~`), an
    /// alias's its anchor's name (`*k`: `k`), a collection's empty.
    pub fn v3_identity(&self, id: NodeId) -> (V3Kind, &str) {
        let node = &self.nodes[id];
        match &node.value {
            Value::Alias(_) => (
                V3Kind::Alias,
                node.alias_name.as_deref().unwrap_or_default(),
            ),
            Value::Scalar { text, .. } => (V3Kind::Scalar, node.written.as_deref().unwrap_or(text)),
            Value::Null => (V3Kind::Scalar, node.written.as_deref().unwrap_or_default()),
            Value::Seq(_) => (V3Kind::Sequence, ""),
            Value::Map(_) => (V3Kind::Mapping, ""),
        }
    }

    /// The first key of a mapping's own `entries` that go-yaml v3's `mapping` refuses
    /// (decode.go lines 769–780, `uniqueKeys`): a later key of the same `Kind` and `Value`
    /// ([`Stream::v3_identity`]), merge keys included. An alias `*k` and the scalar its
    /// anchor holds, or `!!binary Zm9v` and `foo`, are no such pair (a map then keeps
    /// the last). Gives the second key and the first.
    pub fn v3_duplicate_entry(&self, entries: &[(NodeId, NodeId)]) -> Option<(NodeId, NodeId)> {
        if entries.len() < 2 {
            return None;
        }
        let mut seen: HashMap<(V3Kind, &str), NodeId> = HashMap::with_capacity(entries.len());
        for &(k, _) in entries {
            let identity = self.v3_identity(k);
            if let Some(&first) = seen.get(&identity) {
                return Some((k, first));
            }
            seen.insert(identity, k);
        }
        None
    }

    /// The first key of a mapping's own `entries` written again in them (merge keys
    /// aside): the second key and the first. Keys compare by their text, whatever their
    /// quoting, as go-yaml v3 compares them; a key may be an alias (`*k: v`: its text is
    /// its anchor's, its place its own). Only scalar keys are compared.
    pub fn duplicate_entry(&self, entries: &[(NodeId, NodeId)]) -> Option<(NodeId, NodeId)> {
        if entries.len() < 2 {
            return None;
        }
        let mut seen: HashMap<&str, NodeId> = HashMap::with_capacity(entries.len());
        for &(k, _) in entries {
            let Value::Scalar {
                text, merge: false, ..
            } = self.value(k)
            else {
                continue;
            };
            if let Some(&first) = seen.get(text.as_str()) {
                return Some((k, first));
            }
            seen.insert(text, k);
        }
        None
    }
}

fn json_scalar(text: String) -> Value {
    Value::Scalar {
        text,
        plain: false,
        merge: false,
    }
}

/// The message for a key written twice: where the first one is, when known.
fn duplicate_message(key: &str, first: Option<Pos>) -> String {
    match first {
        Some(p) => format!("duplicate key {key:?} (first at {}:{})", p.line, p.column),
        None => format!("duplicate key {key:?}"),
    }
}

/// JSON as the fallback reads it: objects keep their order and refuse a key written twice
/// (`serde_json::Value` would keep only the last).
enum Json {
    Null,
    Scalar(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl<'de> serde::Deserialize<'de> for Json {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Json;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_unit<E>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
                Ok(Json::Scalar(v.to_string()))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
                Ok(Json::Scalar(v.to_string()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
                Ok(Json::Scalar(v.to_string()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Json, E> {
                Ok(Json::Scalar(
                    serde_json::Number::from_f64(v)
                        .map_or_else(|| v.to_string(), |n| n.to_string()),
                ))
            }
            fn visit_str<E>(self, v: &str) -> Result<Json, E> {
                Ok(Json::Scalar(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<Json, E> {
                Ok(Json::Scalar(v))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<Json, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = a.next_element()? {
                    items.push(item);
                }
                Ok(Json::Array(items))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<Json, A::Error> {
                let mut entries: Vec<(String, Json)> = Vec::new();
                let mut seen = std::collections::HashSet::new();
                while let Some(key) = a.next_key::<String>()? {
                    if !seen.insert(key.clone()) {
                        return Err(serde::de::Error::custom(duplicate_message(&key, None)));
                    }
                    let value = a.next_value()?;
                    entries.push((key, value));
                }
                Ok(Json::Object(entries))
            }
        }
        d.deserialize_any(V)
    }
}

enum Frame {
    Seq {
        anchor: usize,
        pos: Pos,
        tag: Option<String>,
        items: Vec<NodeId>,
    },
    Map {
        anchor: usize,
        pos: Pos,
        tag: Option<String>,
        entries: Vec<(NodeId, NodeId)>,
        key: Option<NodeId>,
    },
}

/// A parser tag in go-yaml v3's short form (`shortTag`, resolve.go lines 86–94: the
/// core schema's prefix `tag:yaml.org,2002:` becomes `!!`); `None` for the
/// non-specific `!`, which go-yaml v3's parser treats as no tag (decode.go line 172).
fn short_tag(tag: &saphyr_parser::Tag) -> Option<String> {
    let full = format!("{}{}", tag.handle, tag.suffix);
    if full == "!" {
        return None;
    }
    Some(match full.strip_prefix("tag:yaml.org,2002:") {
        Some(suffix) => format!("!!{suffix}"),
        None => full,
    })
}

/// Go's `base64.StdEncoding.DecodeString` (padded, line breaks skipped, trailing bits
/// not checked), as go-yaml v3 decodes a `!!binary` scalar (decode.go line 817): the
/// bytes as text (invalid UTF-8 replaced), or `None` when it is not base64.
fn base64_std(text: &str) -> Option<String> {
    let digits: Vec<u8> = text.bytes().filter(|&c| c != b'\r' && c != b'\n').collect();
    if !digits.len().is_multiple_of(4) {
        return None;
    }
    let value = |c: u8| -> Option<u32> {
        Some(u32::from(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        }))
    };
    let mut out = Vec::with_capacity(digits.len() / 4 * 3);
    let quads = digits.len() / 4;
    for (i, quad) in digits.chunks(4).enumerate() {
        let pad = quad.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && i + 1 != quads) {
            return None;
        }
        let mut n = 0u32;
        for &c in &quad[..4 - pad] {
            n = (n << 6) | value(c)?;
        }
        n <<= 6 * pad as u32;
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

#[derive(Default)]
struct Builder {
    stream: Stream,
    /// The document being read.
    current: Option<Document>,
    /// Only the first document is read.
    first_only: bool,
    /// A key written twice is an error (else recorded on its [`Document`]).
    refuse_duplicates: bool,
    stack: Vec<Frame>,
    /// Parser anchor id → the complete node it names, for the current document.
    anchors: HashMap<usize, NodeId>,
    cursor: Cursor,
}

/// Maps the parser's character indexes to byte offsets, moving forward only (events come in
/// source order), so that the whole document costs one pass.
#[derive(Default)]
struct Cursor {
    chars: usize,
    bytes: usize,
}

impl Cursor {
    fn byte_of(&mut self, text: &str, char_index: usize) -> usize {
        if char_index < self.chars {
            *self = Cursor::default();
        }
        for c in text[self.bytes..].chars() {
            if self.chars >= char_index {
                break;
            }
            self.chars += 1;
            self.bytes += c.len_utf8();
        }
        self.bytes
    }
}

impl Builder {
    /// Where a scalar's content starts. The parser's span of a scalar with an anchor or a tag
    /// starts at those properties (`&img alpine`); the position we want is `alpine`'s.
    fn content_start(&mut self, text: &str, start: &Marker, end: &Marker) -> Pos {
        enum Skip {
            Blank,
            Property,
            Comment,
        }
        let fallback = Pos::from_marker(start);
        let from = self.cursor.byte_of(text, start.index());
        let (mut line, mut column) = (fallback.line, fallback.column);
        let mut state = Skip::Blank;
        for c in text[from..]
            .chars()
            .take(end.index().saturating_sub(start.index()))
        {
            match state {
                Skip::Property if matches!(c, ' ' | '\t' | '\r' | '\n') => state = Skip::Blank,
                Skip::Comment if c == '\n' => state = Skip::Blank,
                Skip::Property | Skip::Comment => {}
                Skip::Blank => match c {
                    '&' | '!' => state = Skip::Property,
                    '#' => state = Skip::Comment,
                    ' ' | '\t' | '\r' | '\n' => {}
                    _ => return Pos { line, column },
                },
            }
            if c == '\n' {
                line += 1;
                column = 1;
            } else {
                column += 1;
            }
        }
        fallback
    }

    fn load(text: &str, first_only: bool, refuse_duplicates: bool) -> Result<Stream, LoadError> {
        let builder = Builder {
            first_only,
            refuse_duplicates,
            ..Builder::default()
        };
        // The parser is not ours: a panic in it must become an error, not a crash.
        match catch_unwind(AssertUnwindSafe(|| builder.run(text))) {
            Ok(result) => result,
            Err(_) => Err(LoadError {
                pos: None,
                message: "the YAML parser failed on this input".to_owned(),
                syntax: true,
            }),
        }
    }

    fn run(mut self, text: &str) -> Result<Stream, LoadError> {
        self.stream.yaml_directive = yaml_directive(text);
        let mut started = false;
        let mut parser = Parser::new_from_str(text);
        for event in parser.by_ref() {
            let (event, span) = event.map_err(|e| {
                let pos = Pos::from_marker(e.marker());
                // The scanner reports a tab where the token before it began or ended,
                // or just after the tab: the tab is on that line before the mark, else
                // the first one from there on.
                match e.info().contains("tab").then(|| tab_near(text, pos)) {
                    Some(Some(tab)) => LoadError {
                        pos: Some(tab),
                        message: format!(
                            "not valid YAML: a tab character where YAML needs spaces \
                             (indentation is spaces only) ({})",
                            e.info()
                        ),
                        syntax: true,
                    },
                    _ => LoadError {
                        pos: Some(pos),
                        message: format!("not valid YAML: {}", e.info()),
                        syntax: true,
                    },
                }
            })?;
            let pos = Pos::from_marker(&span.start);
            match event {
                Event::DocumentStart(_) => {
                    started = true;
                    self.anchors.clear();
                    self.current = Some(Document::default());
                }
                Event::DocumentEnd | Event::StreamEnd if self.first_only && started => break,
                Event::DocumentEnd => self.end_document(),
                Event::Nothing | Event::StreamStart | Event::StreamEnd => {}
                Event::Alias(anchor) => {
                    let Some(&target) = self.anchors.get(&anchor) else {
                        return Err(LoadError {
                            pos: Some(pos),
                            message: "an alias refers to the node that contains it".to_owned(),
                            syntax: false,
                        });
                    };
                    // A node of its own, for where it is written; what it names is shared.
                    let id = self.stream.push(Value::Alias(target), Some(pos))?;
                    let from = self.cursor.byte_of(text, span.start.index());
                    self.stream.nodes[id].alias_name = text[from..].strip_prefix('*').map(|rest| {
                        rest.split(|c: char| c.is_whitespace() || ",[]{}".contains(c))
                            .next()
                            .unwrap_or_default()
                            .to_owned()
                    });
                    self.attach(id);
                }
                Event::Scalar(value, style, anchor, tag) => {
                    let pos = if anchor != 0 || tag.is_some() {
                        self.content_start(text, &span.start, &span.end)
                    } else {
                        pos
                    };
                    let tag = tag.as_deref().and_then(short_tag);
                    let is_str_tag = matches!(tag.as_deref(), Some("!!str" | "!!binary"));
                    let plain = style == ScalarStyle::Plain && !is_str_tag;
                    let untagged = plain && tag.is_none();
                    let binary = match tag.as_deref() {
                        Some("!!binary") => Some(base64_std(&value)),
                        _ => None,
                    };
                    let bad_base64 = binary.as_ref().is_some_and(Option::is_none);
                    let mut written = None;
                    let value =
                        if untagged && matches!(&*value, "" | "~" | "null" | "Null" | "NULL") {
                            written = Some(value.into_owned());
                            Value::Null
                        } else {
                            let merge =
                                value == "<<" && (untagged || tag.as_deref() == Some("!!merge"));
                            let text = match binary.flatten() {
                                Some(bytes) => {
                                    written = Some(value.into_owned());
                                    bytes
                                }
                                None => value.into_owned(),
                            };
                            Value::Scalar { merge, plain, text }
                        };
                    let id = self.finish(value, pos, anchor)?;
                    self.stream.nodes[id].tag = tag;
                    self.stream.nodes[id].bad_base64 = bad_base64;
                    self.stream.nodes[id].written = written;
                }
                Event::SequenceStart(anchor, tag) => {
                    self.open(pos)?;
                    self.stack.push(Frame::Seq {
                        anchor,
                        pos,
                        tag: tag.as_deref().and_then(short_tag),
                        items: Vec::new(),
                    });
                }
                Event::MappingStart(anchor, tag) => {
                    self.open(pos)?;
                    self.stack.push(Frame::Map {
                        anchor,
                        pos,
                        tag: tag.as_deref().and_then(short_tag),
                        entries: Vec::new(),
                        key: None,
                    });
                }
                Event::SequenceEnd | Event::MappingEnd => match self.stack.pop() {
                    Some(Frame::Seq {
                        anchor,
                        pos,
                        tag,
                        items,
                    }) => {
                        let id = self.finish(Value::Seq(items), pos, anchor)?;
                        self.stream.nodes[id].tag = tag;
                    }
                    Some(Frame::Map {
                        anchor,
                        pos,
                        tag,
                        entries,
                        ..
                    }) => {
                        self.check_duplicates(&entries)?;
                        let id = self.finish(Value::Map(entries), pos, anchor)?;
                        self.stream.nodes[id].tag = tag;
                    }
                    None => {}
                },
            }
        }
        self.end_document();
        if self.first_only {
            self.stream.ignored_documents = later_documents(parser);
        }
        Ok(self.stream)
    }

    fn end_document(&mut self) {
        if let Some(doc) = self.current.take() {
            self.stream.documents.push(doc);
        }
    }

    /// A key written twice in one mapping (merge keys aside), at the second, naming the
    /// first: an error when reading the first document only, else recorded on the document
    /// (the first one found). Keys compare by their text, whatever their quoting, as go-yaml
    /// v3 compares them.
    fn check_duplicates(&mut self, entries: &[(NodeId, NodeId)]) -> Result<(), LoadError> {
        if self.current.as_ref().is_some_and(|d| d.duplicate.is_some()) {
            return Ok(());
        }
        match self.stream.duplicate_key(entries) {
            Some(found) if self.refuse_duplicates => Err(found),
            Some(found) => {
                self.current.get_or_insert_default().duplicate = Some(found);
                Ok(())
            }
            None => Ok(()),
        }
    }

    fn open(&self, pos: Pos) -> Result<(), LoadError> {
        if self.stack.len() >= MAX_DEPTH {
            return Err(LoadError {
                pos: Some(pos),
                message: format!("nested more than {MAX_DEPTH} levels deep"),
                // JSON this deep is tried as JSON, which has limits of its own.
                syntax: true,
            });
        }
        Ok(())
    }

    fn finish(&mut self, value: Value, pos: Pos, anchor: usize) -> Result<NodeId, LoadError> {
        let id = self.stream.push(value, Some(pos))?;
        if anchor != 0 {
            self.anchors.insert(anchor, id);
        }
        self.attach(id);
        Ok(id)
    }

    fn attach(&mut self, id: NodeId) {
        match self.stack.last_mut() {
            None => {
                let doc = self.current.get_or_insert_default();
                if doc.root.is_none() {
                    doc.root = Some(id);
                }
            }
            Some(Frame::Seq { items, .. }) => items.push(id),
            Some(Frame::Map { entries, key, .. }) => match key.take() {
                None => *key = Some(id),
                Some(k) => entries.push((k, id)),
            },
        }
    }
}

/// The first `%YAML` directive before the first document (directives start a line, and
/// only blank and comment lines and other directives come before them), as the parser
/// read it.
fn yaml_directive(text: &str) -> Option<(Pos, u64, u64)> {
    for (i, line) in text.trim_start_matches('\u{feff}').lines().enumerate() {
        let trimmed = line.trim_end();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let Some(rest) = trimmed.strip_prefix("%YAML") else {
            if trimmed.starts_with('%') {
                continue;
            }
            return None;
        };
        let version = rest.trim_start().split([' ', '\t']).next()?;
        let (major, minor) = version.split_once('.')?;
        return Some((
            Pos {
                line: i + 1,
                column: 1,
            },
            major.parse().ok()?,
            minor.parse().ok()?,
        ));
    }
    None
}

/// Scans the rest of the stream after the first document: where each later document with
/// content starts. A document whose first event is a null scalar (nothing after `---`, or
/// only comments) is empty. A syntax error ends the scan; the document it is in counts.
fn later_documents(parser: Parser<'_, saphyr_parser::StrInput<'_>>) -> Vec<Pos> {
    let mut found = Vec::new();
    let mut pending: Option<Pos> = None;
    // A panic of the parser in a document that is not read must not fail the read: what
    // was found so far is kept.
    let _ = catch_unwind(AssertUnwindSafe(|| {
        scan_later(parser, &mut found, &mut pending)
    }));
    found.extend(pending);
    found
}

fn scan_later(
    parser: Parser<'_, saphyr_parser::StrInput<'_>>,
    found: &mut Vec<Pos>,
    pending: &mut Option<Pos>,
) {
    for event in parser {
        // A syntax error: the document it is in (still pending, if it had no content
        // yet) is named by the caller.
        let Ok((event, span)) = event else { break };
        match event {
            Event::DocumentStart(_) => *pending = Some(Pos::from_marker(&span.start)),
            Event::StreamEnd => break,
            Event::Nothing | Event::StreamStart => {}
            // A document that ends, or starts with a null, before any content is empty.
            Event::DocumentEnd => *pending = None,
            Event::Scalar(ref value, ScalarStyle::Plain, 0, None)
                if matches!(&**value, "" | "~" | "null" | "Null" | "NULL") =>
            {
                *pending = None;
            }
            _ => found.extend(pending.take()),
        }
    }
}

/// Where the tab that a scanner error at `mark` is about is (line and column, 1-based,
/// in characters): the first tab on `mark`'s line up to `mark`, else the first tab
/// after it.
fn tab_near(text: &str, mark: Pos) -> Option<Pos> {
    let (mut line, mut column) = (1, 1);
    for c in text.chars() {
        if c == '\t' && (line == mark.line || (line, column) >= (mark.line, mark.column)) {
            return Some(Pos { line, column });
        }
        if c == '\n' {
            line += 1;
            column = 1;
        } else {
            column += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bomb(levels: usize) -> String {
        let mut text = String::from("m0: &m0 {k0: v}\n");
        for i in 1..levels {
            let p = i - 1;
            text.push_str(&format!("m{i}: &m{i} {{<<: [*m{p}, *m{p}], k{i}: v}}\n"));
        }
        text
    }

    #[test]
    fn a_merge_bomb_is_linear_once_and_refused_on_every_path() {
        let s = Stream::load_first(&bomb(40)).unwrap();
        let root = s.documents[0].root.unwrap();
        let (_, last) = *s.own_entries(root).unwrap().last().unwrap();
        let key = |k: NodeId| s.text(k).map(str::to_owned);
        let budget = Budget::new(10_000);
        let once = s.merged_entries(last, &budget, Merges::Once, key).unwrap();
        assert_eq!(once.len(), 40);
        assert_eq!(
            s.merged_entries(last, &budget, Merges::EveryPath, key),
            Err(LookupError::Exhausted)
        );
    }

    #[test]
    fn the_first_repeated_key_is_at_the_second_naming_the_first() {
        let s = Stream::load_all("{a: 1, b: 2, 'a': 3, b: 4}\n").unwrap();
        let root = s.documents[0].root.unwrap();
        let dup = s.duplicate_key(s.own_entries(root).unwrap()).unwrap();
        assert_eq!(dup.message, "duplicate key \"a\" (first at 1:2)");
        assert_eq!(
            dup.pos,
            Some(Pos {
                line: 1,
                column: 14
            })
        );
        let s = Stream::load_all("{<<: {x: 1}, <<: {y: 2}, z: 3}\n").unwrap();
        let root = s.documents[0].root.unwrap();
        assert_eq!(s.duplicate_key(s.own_entries(root).unwrap()), None);
    }
}
