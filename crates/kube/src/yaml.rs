//! A YAML stream (all its documents) as one arena of positioned nodes.
//!
//! Built from `saphyr-parser` events, so that every node keeps the line and column where
//! it is written. Architecture invariants:
//! - An alias is the *same* node as its anchor (a shared index), never a copy: an alias
//!   bomb costs no memory. Walks that follow aliases or merge keys spend from the stream's
//!   [`Budget`], so they cost bounded time too.
//! - Nodes refer to each other by index, and an anchor is usable only once its node is
//!   complete, so the graph has no cycles.
//! - Merge keys (`<<: *a`, `<<: [*a, *b]`) are resolved on lookup as the YAML merge type
//!   says: a mapping's own keys win over merged ones, earlier merged mappings over later
//!   ones. A merged value keeps the position where it is written.
//! - The parser is not ours: a panic inside it becomes an error.
//! - A key written twice in one mapping (merge keys aside) is recorded on its document
//!   ([`Document::duplicate`]), naming both places, for readers to refuse as kubectl and
//!   go-yaml v3 do; loading itself does not fail, so that routing can still look at it.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::panic::{AssertUnwindSafe, catch_unwind};

use saphyr_parser::{Event, Marker, Parser, ScalarStyle};

/// Index of a node in [`Stream::nodes`].
pub(crate) type NodeId = usize;

/// Deepest nesting of collections accepted.
const MAX_DEPTH: usize = 256;
/// Most nodes accepted in one stream (an alias counts once).
const MAX_NODES: usize = 2_000_000;
/// Work allowance of one stream: merged mapping entries looked at, and nodes visited when
/// deserializing (where aliases could otherwise multiply the work).
pub(crate) const BUDGET: usize = 8_000_000;

/// A 1-based line and column (in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pos {
    pub line: usize,
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

#[derive(Debug)]
pub(crate) enum Value {
    /// `~`, `null`, an empty plain scalar.
    Null,
    /// Any other scalar, as written. `plain` is true for an unquoted scalar without a `!!str`
    /// tag (one whose type is resolved from its text); `merge` for a plain, untagged `<<`.
    Scalar {
        text: String,
        plain: bool,
        merge: bool,
    },
    Seq(Vec<NodeId>),
    Map(Vec<(NodeId, NodeId)>),
}

#[derive(Debug)]
pub(crate) struct Node {
    pub value: Value,
    pub pos: Pos,
}

/// One document of the stream.
#[derive(Debug, Clone)]
pub(crate) struct Document {
    /// `None` for an empty document (`---` followed by nothing, only comments, or `~`).
    pub root: Option<NodeId>,
    /// The first key written twice in one mapping of this document: at the second, with
    /// `duplicate key "k" (first at L:C)` as the message.
    pub duplicate: Option<YamlError>,
}

/// Why a text could not be loaded, or a walk had to stop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct YamlError {
    pub pos: Option<Pos>,
    pub message: String,
}

/// Remaining work allowance, shared by every walk over one stream.
#[derive(Debug)]
pub(crate) struct Budget(Cell<usize>);

impl Budget {
    pub fn spend(&self, units: usize) -> Result<(), YamlError> {
        let left = self.0.get().checked_sub(units).ok_or_else(|| YamlError {
            pos: None,
            message: "too complex: aliases and merge keys expand beyond the limit".to_owned(),
        })?;
        self.0.set(left);
        Ok(())
    }
}

/// A whole YAML stream.
#[derive(Debug)]
pub(crate) struct Stream {
    pub nodes: Vec<Node>,
    pub documents: Vec<Document>,
    pub budget: Budget,
}

/// One entry of a mapping after merge keys are resolved.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// The key's text (`null` for a null key; empty for a collection used as a key).
    pub key: String,
    /// The key node.
    pub key_node: NodeId,
    /// The value node.
    pub value: NodeId,
}

impl Stream {
    /// Parses every document of `text`.
    pub fn load(text: &str) -> Result<Stream, YamlError> {
        match catch_unwind(AssertUnwindSafe(|| Builder::new().run(text))) {
            Ok(result) => result,
            Err(_) => Err(YamlError {
                pos: None,
                message: "the YAML parser failed on this input".to_owned(),
            }),
        }
    }

    pub fn pos(&self, id: NodeId) -> Pos {
        self.nodes[id].pos
    }

    /// The text of a non-null scalar.
    pub fn text(&self, id: NodeId) -> Option<&str> {
        match &self.nodes[id].value {
            Value::Scalar { text, .. } => Some(text),
            _ => None,
        }
    }

    pub fn is_null(&self, id: NodeId) -> bool {
        matches!(self.nodes[id].value, Value::Null)
    }

    pub fn is_map(&self, id: NodeId) -> bool {
        matches!(self.nodes[id].value, Value::Map(_))
    }

    /// The items of a sequence.
    pub fn items(&self, id: NodeId) -> Option<&[NodeId]> {
        match &self.nodes[id].value {
            Value::Seq(items) => Some(items),
            _ => None,
        }
    }

    /// What the node is, for messages.
    pub fn kind_name(&self, id: NodeId) -> &'static str {
        match self.nodes[id].value {
            Value::Null => "null",
            Value::Scalar { .. } => "a scalar",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }

    fn key_text(&self, id: NodeId) -> String {
        match &self.nodes[id].value {
            Value::Null => "null".to_owned(),
            Value::Scalar { text, .. } => text.clone(),
            Value::Seq(_) | Value::Map(_) => String::new(),
        }
    }

    fn is_merge_key(&self, id: NodeId) -> bool {
        matches!(self.nodes[id].value, Value::Scalar { merge: true, .. })
    }

    /// The entries written in the mapping itself, merge keys included as they are, in
    /// order. `None` when the node is not a mapping.
    pub fn own_entries(&self, id: NodeId) -> Option<&[(NodeId, NodeId)]> {
        match &self.nodes[id].value {
            Value::Map(entries) => Some(entries),
            _ => None,
        }
    }

    /// The entries of a mapping with merge keys resolved: each key once, the winning value
    /// (a later duplicate wins over an earlier one, own keys over merged ones), in the order
    /// of first appearance. `None` when the node is not a mapping.
    pub fn entries(&self, map: NodeId) -> Result<Option<Vec<Entry>>, YamlError> {
        if !self.is_map(map) {
            return Ok(None);
        }
        let mut out: Vec<Entry> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        // Mappings in priority order: the mapping itself, then what its `<<` keys merge in,
        // depth first.
        // A mapping merged twice adds nothing the second time (its keys are all there
        // already), so each is visited once: merge bombs stay linear.
        let mut stack = vec![map];
        let mut seen = HashSet::new();
        let mut first = true;
        while let Some(current) = stack.pop() {
            if !seen.insert(current) {
                continue;
            }
            let Value::Map(entries) = &self.nodes[current].value else {
                return Err(YamlError {
                    pos: Some(self.pos(current)),
                    message: "a merge key (<<) must merge a mapping or a list of mappings"
                        .to_owned(),
                });
            };
            // Own entries cost nothing beyond the file's size; merged ones are budgeted, as
            // the same large mapping can be merged into many places.
            if !first {
                self.budget.spend(1 + entries.len())?;
            }
            let mut sources = Vec::new();
            for &(k, v) in entries {
                if self.is_merge_key(k) {
                    match &self.nodes[v].value {
                        Value::Map(_) => sources.push(v),
                        Value::Seq(items) => sources.extend(items.iter().copied()),
                        _ => sources.push(v),
                    }
                    continue;
                }
                let key = self.key_text(k);
                match index.get(&key) {
                    // Own keys: a later duplicate replaces the earlier one in place.
                    Some(&i) if first => {
                        out[i].key_node = k;
                        out[i].value = v;
                    }
                    // Merged keys never override what is already there.
                    Some(_) => {}
                    None => {
                        index.insert(key.clone(), out.len());
                        out.push(Entry {
                            key,
                            key_node: k,
                            value: v,
                        });
                    }
                }
            }
            stack.extend(sources.iter().rev());
            first = false;
        }
        Ok(Some(out))
    }

    /// The value of `key` in a mapping, merge keys resolved. `None` when the node is not a
    /// mapping or has no such key.
    pub fn get(&self, map: NodeId, key: &str) -> Result<Option<NodeId>, YamlError> {
        Ok(self
            .entries(map)?
            .and_then(|entries| entries.into_iter().find(|e| e.key == key))
            .map(|e| e.value))
    }
}

enum Frame {
    Seq {
        anchor: usize,
        pos: Pos,
        items: Vec<NodeId>,
    },
    Map {
        anchor: usize,
        pos: Pos,
        entries: Vec<(NodeId, NodeId)>,
        key: Option<NodeId>,
    },
}

struct Builder {
    nodes: Vec<Node>,
    documents: Vec<Document>,
    current: Option<Document>,
    stack: Vec<Frame>,
    /// Parser anchor id → the complete node it names, for the current document.
    anchors: HashMap<usize, NodeId>,
    /// Character index → byte offset, moving forward only.
    chars: usize,
    bytes: usize,
}

impl Builder {
    fn new() -> Builder {
        Builder {
            nodes: Vec::new(),
            documents: Vec::new(),
            current: None,
            stack: Vec::new(),
            anchors: HashMap::new(),
            chars: 0,
            bytes: 0,
        }
    }

    fn byte_of(&mut self, text: &str, char_index: usize) -> usize {
        if char_index < self.chars {
            self.chars = 0;
            self.bytes = 0;
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

    /// Where a scalar's content starts: the parser's span of a scalar with an anchor or a
    /// tag starts at those properties (`&img alpine`), and the position wanted is `alpine`'s.
    fn content_start(&mut self, text: &str, start: &Marker, end: &Marker) -> Pos {
        let fallback = Pos::from_marker(start);
        let from = self.byte_of(text, start.index());
        let (mut line, mut column) = (fallback.line, fallback.column);
        // 0: between tokens, 1: inside a property, 2: inside a comment.
        let mut state = 0u8;
        for c in text[from..]
            .chars()
            .take(end.index().saturating_sub(start.index()))
        {
            let blank = matches!(c, ' ' | '\t' | '\r' | '\n');
            match state {
                1 if blank => state = 0,
                2 if c == '\n' => state = 0,
                1 | 2 => {}
                _ => match c {
                    '&' | '!' => state = 1,
                    '#' => state = 2,
                    _ if blank => {}
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

    fn run(mut self, text: &str) -> Result<Stream, YamlError> {
        for event in Parser::new_from_str(text) {
            let (event, span) = event.map_err(|e| YamlError {
                pos: Some(Pos::from_marker(e.marker())),
                message: format!("not valid YAML: {}", e.info()),
            })?;
            let pos = Pos::from_marker(&span.start);
            match event {
                Event::DocumentStart(_) => {
                    self.anchors.clear();
                    self.current = Some(Document {
                        root: None,
                        duplicate: None,
                    });
                }
                Event::DocumentEnd => self.end_document(),
                Event::Nothing | Event::StreamStart | Event::StreamEnd => {}
                Event::Alias(anchor) => {
                    let Some(&id) = self.anchors.get(&anchor) else {
                        return Err(YamlError {
                            pos: Some(pos),
                            message: "an alias refers to the node that contains it".to_owned(),
                        });
                    };
                    self.attach(id);
                }
                Event::Scalar(value, style, anchor, tag) => {
                    let pos = if anchor != 0 || tag.is_some() {
                        self.content_start(text, &span.start, &span.end)
                    } else {
                        pos
                    };
                    let is_str_tag = tag.as_ref().is_some_and(|t| t.suffix == "str");
                    let plain = style == ScalarStyle::Plain && !is_str_tag;
                    let value = if plain
                        && tag.is_none()
                        && matches!(&*value, "" | "~" | "null" | "Null" | "NULL")
                    {
                        Value::Null
                    } else {
                        Value::Scalar {
                            merge: plain && tag.is_none() && value == "<<",
                            plain,
                            text: value.into_owned(),
                        }
                    };
                    self.finish(value, pos, anchor)?;
                }
                Event::SequenceStart(anchor, _) => {
                    self.open(pos)?;
                    self.stack.push(Frame::Seq {
                        anchor,
                        pos,
                        items: Vec::new(),
                    });
                }
                Event::MappingStart(anchor, _) => {
                    self.open(pos)?;
                    self.stack.push(Frame::Map {
                        anchor,
                        pos,
                        entries: Vec::new(),
                        key: None,
                    });
                }
                Event::SequenceEnd | Event::MappingEnd => match self.stack.pop() {
                    Some(Frame::Seq { anchor, pos, items }) => {
                        self.finish(Value::Seq(items), pos, anchor)?;
                    }
                    Some(Frame::Map {
                        anchor,
                        pos,
                        entries,
                        ..
                    }) => {
                        self.check_duplicates(&entries);
                        self.finish(Value::Map(entries), pos, anchor)?;
                    }
                    None => {}
                },
            }
        }
        self.end_document();
        Ok(Stream {
            nodes: self.nodes,
            documents: self.documents,
            budget: Budget(Cell::new(BUDGET)),
        })
    }

    /// Closes the current document. A document with no content (or only `~`) has a null
    /// root, kept as no root.
    fn end_document(&mut self) {
        if let Some(mut doc) = self.current.take() {
            if doc
                .root
                .is_some_and(|r| matches!(self.nodes[r].value, Value::Null))
            {
                doc.root = None;
            }
            self.documents.push(doc);
        }
    }

    /// Records the first key written twice in one mapping of the current document (merge
    /// keys aside). Keys compare by their text whatever their quoting, as go-yaml v3 does.
    fn check_duplicates(&mut self, entries: &[(NodeId, NodeId)]) {
        if entries.len() < 2 || self.current.as_ref().is_some_and(|d| d.duplicate.is_some()) {
            return;
        }
        let mut seen: HashMap<&str, NodeId> = HashMap::with_capacity(entries.len());
        let mut found = None;
        for &(k, _) in entries {
            let Value::Scalar {
                text, merge: false, ..
            } = &self.nodes[k].value
            else {
                continue;
            };
            if let Some(&first) = seen.get(text.as_str()) {
                let f = self.nodes[first].pos;
                found = Some(YamlError {
                    pos: Some(self.nodes[k].pos),
                    message: format!("duplicate key {text:?} (first at {}:{})", f.line, f.column),
                });
                break;
            }
            seen.insert(text, k);
        }
        if let Some(found) = found {
            self.current
                .get_or_insert(Document {
                    root: None,
                    duplicate: None,
                })
                .duplicate = Some(found);
        }
    }

    fn open(&self, pos: Pos) -> Result<(), YamlError> {
        if self.stack.len() >= MAX_DEPTH {
            return Err(YamlError {
                pos: Some(pos),
                message: format!("nested more than {MAX_DEPTH} levels deep"),
            });
        }
        Ok(())
    }

    fn finish(&mut self, value: Value, pos: Pos, anchor: usize) -> Result<(), YamlError> {
        if self.nodes.len() >= MAX_NODES {
            return Err(YamlError {
                pos: Some(pos),
                message: format!("too large: more than {MAX_NODES} YAML nodes"),
            });
        }
        self.nodes.push(Node { value, pos });
        let id = self.nodes.len() - 1;
        if anchor != 0 {
            self.anchors.insert(anchor, id);
        }
        self.attach(id);
        Ok(())
    }

    fn attach(&mut self, id: NodeId) {
        match self.stack.last_mut() {
            None => {
                let doc = self.current.get_or_insert(Document {
                    root: None,
                    duplicate: None,
                });
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

#[cfg(test)]
mod tests {
    use super::*;

    fn path(s: &Stream, doc: usize, keys: &[&str]) -> Option<NodeId> {
        let mut node = s.documents[doc].root?;
        for k in keys {
            node = s.get(node, k).ok()??;
        }
        Some(node)
    }

    #[test]
    fn documents_are_all_read_with_positions() {
        let s = Stream::load("a: 1\n---\nb: é\n---\n# empty\n---\n- x\n").unwrap();
        assert_eq!(s.documents.len(), 4);
        assert!(s.documents[2].root.is_none());
        let b = path(&s, 1, &["b"]).unwrap();
        assert_eq!(s.text(b), Some("é"));
        assert_eq!(s.pos(b), Pos { line: 3, column: 4 });
    }

    #[test]
    fn anchors_are_per_document_and_shared() {
        let s = Stream::load("a: &x {k: v}\nb: *x\n").unwrap();
        assert_eq!(path(&s, 0, &["a"]), path(&s, 0, &["b"]));
        let err = Stream::load("a: &x 1\n---\nb: *x\n").unwrap_err();
        assert!(err.message.contains("alias"), "{err:?}");
    }

    #[test]
    fn anchored_scalars_point_at_their_content() {
        let s = Stream::load("image: &img  nginx:1\nother: !!str  x\n").unwrap();
        let image = path(&s, 0, &["image"]).unwrap();
        assert_eq!(
            s.pos(image),
            Pos {
                line: 1,
                column: 14
            }
        );
        let other = path(&s, 0, &["other"]).unwrap();
        assert_eq!(
            s.pos(other),
            Pos {
                line: 2,
                column: 15
            }
        );
        assert!(matches!(
            s.nodes[other].value,
            Value::Scalar { plain: false, .. }
        ));
    }

    #[test]
    fn merge_keys_resolve_with_own_keys_first() {
        let s = Stream::load(
            "base: &b {image: a, pull: x}\nc:\n  <<: *b\n  image: own\nd: {<<: [*b], k: v}\n",
        )
        .unwrap();
        let t = |keys: &[&str]| path(&s, 0, keys).and_then(|n| s.text(n).map(str::to_owned));
        assert_eq!(t(&["c", "image"]).as_deref(), Some("own"));
        assert_eq!(t(&["c", "pull"]).as_deref(), Some("x"));
        assert_eq!(t(&["d", "image"]).as_deref(), Some("a"));
        let bad = Stream::load("a:\n  <<: 3\n").unwrap();
        let a = path(&bad, 0, &["a"]).unwrap();
        assert!(bad.entries(a).is_err());
    }

    #[test]
    fn duplicate_keys_are_recorded_on_their_document() {
        let s = Stream::load("a: 1\n---\nb: {x: 1, 'x': 2}\n---\nc: 1\n").unwrap();
        assert!(s.documents[0].duplicate.is_none());
        let d = s.documents[1].duplicate.clone().unwrap();
        assert_eq!(
            d.pos,
            Some(Pos {
                line: 3,
                column: 11
            })
        );
        assert_eq!(d.message, "duplicate key \"x\" (first at 3:5)");
        assert!(s.documents[2].duplicate.is_none());
        let s = Stream::load("x: &x {a: 1}\ny: &y {b: 1}\nz: {<<: *x, <<: *y, a: 2}\n").unwrap();
        assert!(s.documents[0].duplicate.is_none());
    }

    #[test]
    fn later_duplicate_wins() {
        let s = Stream::load("a: 1\nb: 2\na: 3\n").unwrap();
        let root = s.documents[0].root.unwrap();
        let entries = s.entries(root).unwrap().unwrap();
        let keys: Vec<_> = entries.iter().map(|e| e.key.as_str()).collect();
        assert_eq!(keys, ["a", "b"]);
        assert_eq!(s.text(entries[0].value), Some("3"));
    }

    #[test]
    fn hostile_input_is_refused_not_crashed() {
        assert!(Stream::load(&"[".repeat(100_000)).is_err());
        let block: String = (0..300).map(|i| format!("{}k:\n", " ".repeat(i))).collect();
        assert!(Stream::load(&block).unwrap_err().message.contains("nested"));
        let mut bomb = String::from("m0: &m0 {k0: v}\n");
        for i in 1..60 {
            let p = i - 1;
            bomb.push_str(&format!("m{i}: &m{i} {{<<: [*m{p}, *m{p}], k{i}: v}}\n"));
        }
        // Each level merges the previous one twice: 2^59 paths, but each mapping is
        // visited once.
        let s = Stream::load(&bomb).unwrap();
        let m59 = path(&s, 0, &["m59"]).unwrap();
        assert_eq!(s.entries(m59).unwrap().unwrap().len(), 60);
    }
}
