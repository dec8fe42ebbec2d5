//! A YAML (and so JSON) document as an arena of positioned nodes.
//!
//! Built from `saphyr-parser` events. Architecture invariants:
//! - An alias is the *same* node as its anchor (a shared index), never a copy, so an alias
//!   bomb costs no memory; every walk over the tree spends from a [`Budget`], so it costs
//!   no unbounded time either.
//! - Nodes live in one `Vec` and refer to each other by index: no recursion to build or
//!   drop, whatever the nesting (which is capped anyway).
//! - An anchor becomes usable when its node is complete, so the tree has no cycles.
//! - Merge keys (`<<: *a`, `<<: [*a, *b]`) are resolved on lookup, as the YAML merge type
//!   says: a mapping's own keys win over merged ones, and earlier merged mappings win over
//!   later ones. Merged values keep the position where they are written.
//! - A key written twice in one mapping is a load error naming both places, as go-yaml v3
//!   (which Vela uses) rejects it; a merge key (`<<`) may appear several times.
//! - Only the first document is built; the documents after it are only scanned, so that
//!   a caller can say they are not read.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};

use saphyr_parser::{Event, Marker, Parser, ScalarStyle};

/// Index of a node in [`Doc::nodes`].
pub(crate) type NodeId = usize;

/// Deepest nesting of collections accepted.
pub(crate) const MAX_DEPTH: usize = 256;
/// Most nodes accepted in one document (aliases count once).
pub(crate) const MAX_NODES: usize = 2_000_000;
/// Most mapping entries and merge steps a whole read may look at.
pub(crate) const BUDGET: usize = 4_000_000;

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
    /// `~`, `null`, an empty plain scalar, or JSON `null`.
    Null,
    /// Any other scalar, as written (YAML booleans and numbers included). `merge` is true for
    /// a plain, untagged `<<`, the only spelling that is a merge key.
    Scalar {
        text: String,
        merge: bool,
    },
    Seq(Vec<NodeId>),
    Map(Vec<(NodeId, NodeId)>),
}

#[derive(Debug)]
pub(crate) struct Node {
    pub value: Value,
    /// Where the node starts; `None` for documents read by the JSON fallback.
    pub pos: Option<Pos>,
}

/// One document.
#[derive(Debug, Default)]
pub(crate) struct Doc {
    pub nodes: Vec<Node>,
    /// `None` for an empty stream.
    pub root: Option<NodeId>,
    /// Where each non-empty document after the first starts (its `---`, or its content
    /// when it has none). These documents are not read, as upstream reads only the first;
    /// one that does not parse is listed too, and ends the scan.
    pub ignored_documents: Vec<Pos>,
}

/// Why a text could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LoadError {
    pub pos: Option<Pos>,
    pub message: String,
    /// The parser refused the text (a syntax error, or a failure inside the parser), as
    /// opposed to well-formed text we refuse (a duplicate key, the limits).
    pub syntax: bool,
}

/// Why a lookup stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LookupError {
    /// The [`Budget`] ran out.
    Exhausted,
    /// A `<<` whose value is not a mapping or a list of mappings, at that value.
    BadMerge(Option<Pos>),
}

/// Work allowance for walking a document: one unit per mapping entry looked at or merge
/// followed. Shared by a whole read so that a hostile file ends in bounded time.
#[derive(Debug)]
pub(crate) struct Budget(usize);

impl Budget {
    pub fn new(units: usize) -> Budget {
        Budget(units)
    }

    pub fn spend(&mut self, units: usize) -> Result<(), LookupError> {
        self.0 = self.0.checked_sub(units).ok_or(LookupError::Exhausted)?;
        Ok(())
    }
}

impl Doc {
    /// Loads the first document of a YAML stream. Later documents are not read, as
    /// upstream's YAML decoding does not read them either; where they start is kept in
    /// [`Doc::ignored_documents`], and a syntax error inside one is not an error.
    pub fn load_yaml(text: &str) -> Result<Doc, LoadError> {
        // The parser is not ours: a panic in it must become an error, not a crash.
        match catch_unwind(AssertUnwindSafe(|| Builder::default().run(text))) {
            Ok(result) => result,
            Err(_) => Err(LoadError {
                pos: None,
                message: "the YAML parser failed on this input".to_owned(),
                syntax: true,
            }),
        }
    }

    /// Loads JSON without positions, for JSON that the YAML parser refuses. A key written
    /// twice in one object is an error, as in YAML.
    pub fn load_json(text: &str) -> Result<Doc, LoadError> {
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
        let mut doc = Doc::default();
        // serde_json caps nesting at 128, so this recursion is bounded.
        let root = doc.add_json(&value)?;
        doc.root = Some(root);
        Ok(doc)
    }

    fn add_json(&mut self, value: &Json) -> Result<NodeId, LoadError> {
        let value = match value {
            Json::Null => Value::Null,
            Json::Scalar(s) => scalar(s.clone()),
            Json::Array(items) => Value::Seq(
                items
                    .iter()
                    .map(|v| self.add_json(v))
                    .collect::<Result<_, _>>()?,
            ),
            Json::Object(map) => {
                let mut entries = Vec::with_capacity(map.len());
                for (k, v) in map {
                    let key = self.push(scalar(k.clone()), None)?;
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
        self.nodes.push(Node { value, pos });
        Ok(self.nodes.len() - 1)
    }

    pub fn pos(&self, id: NodeId) -> Option<Pos> {
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

    /// What the node is, for messages: `null`, `string`, `list` or `mapping`.
    pub fn kind_name(&self, id: NodeId) -> &'static str {
        match self.nodes[id].value {
            Value::Null => "null",
            Value::Scalar { .. } => "string",
            Value::Seq(_) => "list",
            Value::Map(_) => "mapping",
        }
    }

    /// The mappings whose keys `map` has, in priority order: `map` itself, then what its
    /// `<<` keys merge in, depth first. Calls `visit` on each in turn until it returns
    /// `Some`. `map` must be a mapping.
    fn walk_merged<T>(
        &self,
        map: NodeId,
        budget: &mut Budget,
        mut visit: impl FnMut(&[(NodeId, NodeId)], &mut Budget) -> Result<Option<T>, LookupError>,
    ) -> Result<Option<T>, LookupError> {
        let mut stack = vec![map];
        let mut sources = Vec::new();
        while let Some(current) = stack.pop() {
            budget.spend(1)?;
            let Value::Map(entries) = &self.nodes[current].value else {
                return Err(LookupError::BadMerge(self.nodes[current].pos));
            };
            if let Some(found) = visit(entries, budget)? {
                return Ok(Some(found));
            }
            sources.clear();
            for &(key, value) in entries {
                if !matches!(self.nodes[key].value, Value::Scalar { merge: true, .. }) {
                    continue;
                }
                match &self.nodes[value].value {
                    Value::Map(_) => sources.push(value),
                    Value::Seq(items) => {
                        budget.spend(items.len())?;
                        for &item in items {
                            if !self.is_map(item) {
                                return Err(LookupError::BadMerge(self.nodes[item].pos));
                            }
                            sources.push(item);
                        }
                    }
                    _ => return Err(LookupError::BadMerge(self.nodes[value].pos)),
                }
            }
            stack.extend(sources.iter().rev());
        }
        Ok(None)
    }

    /// The value of `key` in mapping `map`, merge keys included. A key written twice in
    /// one mapping takes its last value.
    pub fn get(
        &self,
        map: NodeId,
        key: &str,
        budget: &mut Budget,
    ) -> Result<Option<NodeId>, LookupError> {
        if !self.is_map(map) {
            return Ok(None);
        }
        self.walk_merged(map, budget, |entries, budget| {
            budget.spend(entries.len())?;
            Ok(entries
                .iter()
                .rev()
                .find(|&&(k, _)| {
                    matches!(&self.nodes[k].value, Value::Scalar { text, merge: false } if text == key)
                })
                .map(|&(_, v)| v))
        })
    }

    /// All entries of mapping `map` with a string key, merge keys resolved, in order: its
    /// own keys as written (a repeated key in its first place, with its last value), then
    /// merged keys it does not have, in merge order.
    pub fn entries(
        &self,
        map: NodeId,
        budget: &mut Budget,
    ) -> Result<Vec<(String, NodeId)>, LookupError> {
        let mut out: Vec<(String, NodeId)> = Vec::new();
        if !self.is_map(map) {
            return Ok(out);
        }
        let mut seen: HashMap<String, usize> = HashMap::new();
        self.walk_merged::<()>(map, budget, |entries, budget| {
            budget.spend(entries.len())?;
            let mut own: HashMap<&str, usize> = HashMap::new();
            for &(k, v) in entries {
                let Value::Scalar { text, merge: false } = &self.nodes[k].value else {
                    continue;
                };
                if let Some(&i) = own.get(text.as_str()) {
                    out[i].1 = v;
                } else if !seen.contains_key(text.as_str()) {
                    own.insert(text, out.len());
                    out.push((text.clone(), v));
                }
            }
            for (text, i) in own {
                seen.insert(text.to_owned(), i);
            }
            Ok(None)
        })?;
        Ok(out)
    }
}

fn scalar(text: String) -> Value {
    Value::Scalar { text, merge: false }
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
        items: Vec<NodeId>,
    },
    Map {
        anchor: usize,
        pos: Pos,
        entries: Vec<(NodeId, NodeId)>,
        key: Option<NodeId>,
    },
}

#[derive(Default)]
struct Builder {
    doc: Doc,
    stack: Vec<Frame>,
    /// Parser anchor id → the complete node it names.
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

    fn run(mut self, text: &str) -> Result<Doc, LoadError> {
        let mut started = false;
        let mut parser = Parser::new_from_str(text);
        for event in parser.by_ref() {
            let (event, span) = event.map_err(|e| LoadError {
                pos: Some(Pos::from_marker(e.marker())),
                message: format!("not valid YAML: {}", e.info()),
                syntax: true,
            })?;
            let pos = Pos::from_marker(&span.start);
            match event {
                Event::DocumentStart(_) => started = true,
                Event::DocumentEnd | Event::StreamEnd if started => break,
                Event::Nothing | Event::StreamStart | Event::DocumentEnd | Event::StreamEnd => {}
                Event::Alias(anchor) => {
                    let Some(&id) = self.anchors.get(&anchor) else {
                        return Err(LoadError {
                            pos: Some(pos),
                            message: "an alias refers to the node that contains it".to_owned(),
                            syntax: false,
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
                    let plain = style == ScalarStyle::Plain && tag.is_none();
                    let value = if plain && matches!(&*value, "" | "~" | "null" | "Null" | "NULL") {
                        Value::Null
                    } else {
                        Value::Scalar {
                            merge: plain && value == "<<",
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
                        self.check_duplicates(&entries)?;
                        self.finish(Value::Map(entries), pos, anchor)?;
                    }
                    None => {}
                },
            }
        }
        self.doc.ignored_documents = later_documents(parser);
        Ok(self.doc)
    }

    /// A key written twice in one mapping (merge keys aside) is an error at the second,
    /// naming the first. Keys compare by their text, whatever their quoting, as go-yaml v3
    /// compares them.
    fn check_duplicates(&self, entries: &[(NodeId, NodeId)]) -> Result<(), LoadError> {
        if entries.len() < 2 {
            return Ok(());
        }
        let mut seen: HashMap<&str, NodeId> = HashMap::with_capacity(entries.len());
        for &(k, _) in entries {
            let Value::Scalar { text, merge: false } = &self.doc.nodes[k].value else {
                continue;
            };
            if let Some(&first) = seen.get(text.as_str()) {
                return Err(LoadError {
                    pos: self.doc.nodes[k].pos,
                    message: duplicate_message(text, self.doc.nodes[first].pos),
                    syntax: false,
                });
            }
            seen.insert(text, k);
        }
        Ok(())
    }

    fn open(&self, pos: Pos) -> Result<(), LoadError> {
        if self.stack.len() >= MAX_DEPTH {
            return Err(LoadError {
                pos: Some(pos),
                message: format!("nested more than {MAX_DEPTH} levels deep"),
                // As before: JSON this deep is tried as JSON, which has limits of its own.
                syntax: true,
            });
        }
        Ok(())
    }

    fn finish(&mut self, value: Value, pos: Pos, anchor: usize) -> Result<(), LoadError> {
        let id = self.doc.push(value, Some(pos))?;
        if anchor != 0 {
            self.anchors.insert(anchor, id);
        }
        self.attach(id);
        Ok(())
    }

    fn attach(&mut self, id: NodeId) {
        match self.stack.last_mut() {
            None => {
                if self.doc.root.is_none() {
                    self.doc.root = Some(id);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Doc {
        Doc::load_yaml(text).expect("loads")
    }

    fn get_path(doc: &Doc, path: &[&str]) -> Option<NodeId> {
        let mut budget = Budget::new(BUDGET);
        let mut node = doc.root?;
        for key in path {
            node = doc.get(node, key, &mut budget).expect("lookup")?;
        }
        Some(node)
    }

    #[test]
    fn positions_are_one_based_characters() {
        let doc = load("a:\n  bé: \"x\"\n  c: é\n");
        let x = get_path(&doc, &["a", "bé"]).unwrap();
        assert_eq!(doc.pos(x), Some(Pos { line: 2, column: 7 }));
        assert_eq!(doc.text(x), Some("x"));
    }

    #[test]
    fn anchored_and_tagged_scalars_point_at_their_content() {
        let text = "a: &img  alpine\nb: !!str  \"x\"\nc: &t !!str\n  # note\n  y\nd: é &e z\n";
        let doc = load(text);
        let at = |k: &str| doc.pos(get_path(&doc, &[k]).unwrap()).unwrap();
        assert_eq!(
            at("a"),
            Pos {
                line: 1,
                column: 10
            }
        );
        assert_eq!(
            at("b"),
            Pos {
                line: 2,
                column: 11
            }
        );
        assert_eq!(at("c"), Pos { line: 5, column: 3 });
        assert_eq!(doc.text(get_path(&doc, &["d"]).unwrap()), Some("é &e z"));
        assert_eq!(at("d"), Pos { line: 6, column: 4 });
        // After a multi-byte character, character columns still count.
        let doc = load("é: [ &x é, &y  ü ]\n");
        let items = doc.items(get_path(&doc, &["é"]).unwrap()).unwrap().to_vec();
        assert_eq!(doc.pos(items[0]), Some(Pos { line: 1, column: 9 }));
        assert_eq!(
            doc.pos(items[1]),
            Some(Pos {
                line: 1,
                column: 16
            })
        );
    }

    #[test]
    fn nulls_and_quoted_nulls() {
        let doc = load("a:\nb: ~\nc: null\nd: 'null'\ne: \"\"\nf: !!str\n");
        for k in ["a", "b", "c"] {
            assert!(doc.is_null(get_path(&doc, &[k]).unwrap()), "{k}");
        }
        assert_eq!(doc.text(get_path(&doc, &["d"]).unwrap()), Some("null"));
        assert_eq!(doc.text(get_path(&doc, &["e"]).unwrap()), Some(""));
        assert_eq!(doc.text(get_path(&doc, &["f"]).unwrap()), Some(""));
    }

    #[test]
    fn merge_priority_follows_the_yaml_merge_type() {
        let text = "\
a: &a {x: a, y: a, z: a}
b: &b {x: b, y: b, w: b}
c:
  x: own
  <<: [*a, *b]
d:
  <<: *a
  x: own
  '<<': {y: quoted-is-a-plain-key}
";
        let doc = load(text);
        let t = |p: &[&str]| get_path(&doc, p).and_then(|n| doc.text(n).map(str::to_owned));
        assert_eq!(t(&["c", "x"]).as_deref(), Some("own"));
        assert_eq!(t(&["c", "y"]).as_deref(), Some("a"));
        assert_eq!(t(&["c", "w"]).as_deref(), Some("b"));
        assert_eq!(t(&["d", "x"]).as_deref(), Some("own"));
        assert_eq!(t(&["d", "y"]).as_deref(), Some("a"));
        assert_eq!(t(&["d", "<<"]), None);
        // The merged value keeps the position where it is written: inside the anchor.
        let z = get_path(&doc, &["c", "z"]).unwrap();
        assert_eq!(
            doc.pos(z),
            Some(Pos {
                line: 1,
                column: 23
            })
        );

        let mut budget = Budget::new(BUDGET);
        let c = get_path(&doc, &["c"]).unwrap();
        let keys: Vec<String> = doc
            .entries(c, &mut budget)
            .unwrap()
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(keys, ["x", "y", "z", "w"]);
    }

    #[test]
    fn nested_merges_resolve_depth_first() {
        let text = "\
base: &base {image: base, pull: always}
mid: &mid {<<: *base, image: mid}
other: &other {image: other, pull: never, name: other}
leaf: {<<: [*mid, *other]}
";
        let doc = load(text);
        let t = |p: &[&str]| get_path(&doc, p).and_then(|n| doc.text(n).map(str::to_owned));
        assert_eq!(t(&["leaf", "image"]).as_deref(), Some("mid"));
        assert_eq!(t(&["leaf", "pull"]).as_deref(), Some("always"));
        assert_eq!(t(&["leaf", "name"]).as_deref(), Some("other"));
    }

    #[test]
    fn bad_merge_values_are_reported_at_the_value() {
        let doc = load("a:\n  <<: 3\n");
        let mut budget = Budget::new(BUDGET);
        let a = get_path(&doc, &["a"]).unwrap();
        assert_eq!(
            doc.get(a, "x", &mut budget),
            Err(LookupError::BadMerge(Some(Pos { line: 2, column: 7 })))
        );
        let doc = load("x: &x [1]\na:\n  <<: [*x]\n");
        let a = get_path(&doc, &["a"]).unwrap();
        assert!(matches!(
            doc.get(a, "y", &mut budget),
            Err(LookupError::BadMerge(Some(_)))
        ));
    }

    #[test]
    fn a_duplicate_key_is_an_error_at_the_second_naming_the_first() {
        let err = Doc::load_yaml("a: 1\nb: 2\n'a': 3\n").unwrap_err();
        assert_eq!(err.pos, Some(Pos { line: 3, column: 1 }));
        assert_eq!(err.message, "duplicate key \"a\" (first at 1:1)");
        // Merge keys may repeat; a quoted `<<` is a plain key.
        let doc = load("x: &x {k: 1}\ny: &y {j: 2}\nz:\n  <<: *x\n  <<: *y\n  '<<': q\n");
        assert_eq!(doc.text(get_path(&doc, &["z", "j"]).unwrap()), Some("2"));
        assert!(Doc::load_yaml("z: {'<<': 1, \"<<\": 2}\n").is_err());
        // Keys in different mappings, or a key and a merged key, are not duplicates.
        assert!(Doc::load_yaml("- {a: 1}\n- {a: 2}\n").is_ok());
        assert!(Doc::load_yaml("x: &x {a: 1}\ny: {<<: *x, a: 2}\n").is_ok());
        let err = Doc::load_json(r#"{"a": {"b": 1, "b": 2}}"#).unwrap_err();
        assert!(err.message.contains("duplicate key \"b\""), "{err:?}");
    }

    #[test]
    fn only_the_first_document_is_read() {
        let doc = load("---\na: 1\n---\na: 2\n--- [unclosed\n");
        assert_eq!(doc.text(get_path(&doc, &["a"]).unwrap()), Some("1"));
        let lines: Vec<usize> = doc.ignored_documents.iter().map(|p| p.line).collect();
        assert_eq!(lines, [3, 5]);
        // A duplicate key in an ignored document is not looked at either.
        assert!(load("a: 1\n---\nb: 1\nb: 2\n").ignored_documents.len() == 1);
        assert!(load("a: 1\n---\n---\n# c\n").ignored_documents.is_empty());
    }

    #[test]
    fn empty_stream_has_no_root() {
        assert_eq!(load("").root, None);
        assert_eq!(load("# only a comment\n").root, None);
    }

    #[test]
    fn syntax_errors_have_positions() {
        let err = Doc::load_yaml("a: [1, 2\nb: 3\n").unwrap_err();
        assert!(err.pos.is_some(), "{err:?}");
        assert!(err.message.starts_with("not valid YAML"), "{err:?}");
    }

    #[test]
    fn deep_nesting_is_refused_not_overflowed() {
        // Flow nesting: the parser has a limit of its own.
        let text = "[".repeat(100_000);
        assert!(Doc::load_yaml(&text).is_err());
        let text = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        assert!(Doc::load_yaml(&text).is_ok());
        // Block nesting: ours.
        let block = |depth: usize| -> String {
            (0..depth)
                .map(|i| format!("{}k:\n", " ".repeat(i)))
                .collect()
        };
        let err = Doc::load_yaml(&block(MAX_DEPTH + 1)).unwrap_err();
        assert!(err.message.contains("nested"), "{err:?}");
        assert!(Doc::load_yaml(&block(MAX_DEPTH)).is_ok());
        let err = Doc::load_yaml(&block(20_000)).unwrap_err();
        assert!(err.message.contains("nested"), "{err:?}");
    }

    #[test]
    fn alias_bomb_is_shared_not_expanded() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..40 {
            let refs = vec![format!("*a{}", i - 1); 10].join(", ");
            text.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
        }
        let doc = load(&text);
        assert!(doc.nodes.len() < 1_000);
    }

    #[test]
    fn merge_bomb_runs_out_of_budget() {
        // Each level merges the previous one twice: 2^60 paths without a budget.
        let mut text = String::from("m0: &m0 {k0: v}\n");
        for i in 1..60 {
            let p = i - 1;
            text.push_str(&format!("m{i}: &m{i} {{<<: [*m{p}, *m{p}], k{i}: v}}\n"));
        }
        let doc = load(&text);
        let last = get_path(&doc, &["m59"]).unwrap();
        let mut budget = Budget::new(100_000);
        assert_eq!(
            doc.get(last, "missing", &mut budget),
            Err(LookupError::Exhausted)
        );
    }

    #[test]
    fn recursive_alias_is_an_error() {
        let err = Doc::load_yaml("a: &a [1, *a]\n").unwrap_err();
        assert!(err.message.contains("alias"), "{err:?}");
    }

    #[test]
    fn json_fallback_has_no_positions() {
        let doc = Doc::load_json(r#"{"a": {"b": [true, 1, null, "x"]}}"#).unwrap();
        let b = get_path(&doc, &["a", "b"]).unwrap();
        let items = doc.items(b).unwrap().to_vec();
        assert_eq!(doc.text(items[0]), Some("true"));
        assert_eq!(doc.text(items[1]), Some("1"));
        assert!(doc.is_null(items[2]));
        assert_eq!(doc.pos(items[3]), None);
        let err = Doc::load_json("{\n  \"a\": ,\n}").unwrap_err();
        assert_eq!(err.pos.map(|p| p.line), Some(2));
    }
}
