//! A YAML stream (all its documents) as [`pullcheck_input::yaml`] builds it, with the
//! budget and the merge-key lookups of the manifest readers.
//!
//! Architecture invariants, beyond that module's:
//! - Walks that follow aliases or merge keys spend from the stream's [`Budget`], so they
//!   cost bounded time.
//! - Merge keys (`<<: *a`, `<<: [*a, *b]`) are resolved on lookup as the YAML merge type
//!   says: a mapping's own keys win over merged ones, earlier merged mappings over later
//!   ones. A merged value keeps the position where it is written.
//! - A key written twice in one mapping (merge keys aside) is recorded on its document
//!   ([`Document::duplicate`]), naming both places, for readers to refuse as kubectl and
//!   go-yaml v3 do; loading itself does not fail, so that routing can still look at it.
//! - An empty document (`---` followed by nothing, only comments, or `~`) has no root.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::ops::Deref;

#[cfg(doc)]
use pullcheck_input::yaml::Document;
use pullcheck_input::yaml::{self, LoadError};
pub(crate) use pullcheck_input::yaml::{NodeId, Pos, Value};

/// Work allowance of one stream: merged mapping entries looked at, and nodes visited when
/// deserializing (where aliases could otherwise multiply the work).
pub(crate) const BUDGET: usize = 8_000_000;

/// Why a text could not be loaded, or a walk had to stop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct YamlError {
    pub pos: Option<Pos>,
    pub message: String,
}

impl From<LoadError> for YamlError {
    fn from(e: LoadError) -> YamlError {
        YamlError {
            pos: e.pos,
            message: e.message,
        }
    }
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

/// A whole YAML stream. Derefs to the [`yaml::Stream`] for its nodes, documents and
/// accessors.
#[derive(Debug)]
pub(crate) struct Stream {
    yaml: yaml::Stream,
    pub budget: Budget,
}

impl Deref for Stream {
    type Target = yaml::Stream;

    fn deref(&self) -> &yaml::Stream {
        &self.yaml
    }
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
        let mut yaml = yaml::Stream::load_all(text)?;
        let nodes = &yaml.nodes;
        for doc in &mut yaml.documents {
            doc.root = doc.root.filter(|&r| !matches!(nodes[r].value, Value::Null));
        }
        Ok(Stream {
            yaml,
            budget: Budget(Cell::new(BUDGET)),
        })
    }

    /// Where the node starts: every node read from YAML has a position.
    pub fn pos(&self, id: NodeId) -> Pos {
        self.yaml
            .pos(id)
            .expect("every node of a YAML stream has a position")
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
