//! A YAML stream (all its documents) as [`pullcheck_input::yaml`] builds it, with the
//! budget and the merge-key lookups of the manifest readers.
//!
//! Architecture invariants, beyond that module's:
//! - Walks that follow aliases or merge keys spend from the stream's [`Budget`], so they
//!   cost bounded time.
//! - Merge keys (`<<: *a`, `<<: [*a, *b]`) are resolved on lookup by
//!   [`pullcheck_input::yaml`]'s walk, as the YAML merge type says: a mapping's own keys
//!   win over merged ones, earlier merged mappings over later ones; a mapping merged in
//!   along several paths is visited once, so a merge bomb stays linear. Each resolved
//!   entry says through which alias it was merged in ([`Entry::via`]),
//!   so that readers walking [`Reached`] nodes report a value where it is used, as
//!   [`pullcheck_input::yaml`] says: at the first alias on the way to it.
//! - A key written twice in one mapping (merge keys aside) is recorded on its document
//!   ([`Document::duplicate`], found by [`yaml::Stream::duplicate_key`]), naming both places, for readers to refuse as kubectl and
//!   go-yaml v3 do; loading itself does not fail, so that routing can still look at it.
//! - An empty document (`---` followed by nothing, only comments, or `~`) has no root.

use std::ops::Deref;

#[cfg(doc)]
use pullcheck_input::yaml::Document;
pub(crate) use pullcheck_input::yaml::MergedEntry as Entry;
use pullcheck_input::yaml::{self, Budget, LoadError, LookupError, Merges};
pub(crate) use pullcheck_input::yaml::{NodeId, Pos, Reached, Value};

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

impl From<LookupError> for YamlError {
    fn from(e: LookupError) -> YamlError {
        match e {
            LookupError::Exhausted => YamlError {
                pos: None,
                message: "too complex: aliases and merge keys expand beyond the limit".to_owned(),
            },
            LookupError::BadMerge(pos) => YamlError {
                pos,
                message: "a merge key (<<) must merge a mapping or a list of mappings".to_owned(),
            },
        }
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
            budget: Budget::new(BUDGET),
        })
    }

    /// Where the node is written (for an alias, where its `*` is): every node read from
    /// YAML has a position.
    pub fn pos(&self, id: NodeId) -> Pos {
        self.yaml
            .pos(id)
            .expect("every node of a YAML stream has a position")
    }

    /// Where a reached node is used: at the first alias on the way to it, else where it is
    /// written.
    pub fn used(&self, node: Reached) -> Pos {
        self.pos(node.via.unwrap_or(node.id))
    }

    /// Where a reached node itself is written (past any alias).
    pub fn written_pos(&self, node: Reached) -> Pos {
        self.pos(self.resolve(node.id))
    }

    /// ` (written at line:column)` when a reached node is written elsewhere than it is used
    /// (it was reached through an alias), else nothing; for messages.
    pub fn written_note(&self, node: Reached) -> String {
        let written = self.pos(self.resolve(node.id));
        if written == self.used(node) {
            String::new()
        } else {
            format!(" (written at {}:{})", written.line, written.column)
        }
    }

    /// What the node is, for messages.
    pub fn kind_name(&self, id: NodeId) -> &'static str {
        match self.value(id) {
            Value::Null => "null",
            Value::Scalar { .. } => "a scalar",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
            // `value` looks through aliases; kept for completeness.
            Value::Alias(_) => "an alias",
        }
    }

    fn key_text(&self, id: NodeId) -> String {
        match self.value(id) {
            Value::Null => "null".to_owned(),
            Value::Scalar { text, .. } => text.clone(),
            Value::Seq(_) | Value::Map(_) | Value::Alias(_) => String::new(),
        }
    }

    /// The entries of a mapping with merge keys resolved ([`yaml::Stream::merged_entries`],
    /// each merged mapping visited once: [`Merges::Once`]): each key once, the winning
    /// value (a later duplicate wins over an earlier one, own keys over merged ones), in
    /// the order of first appearance. `None` when the node is not a mapping.
    pub fn entries(&self, map: NodeId) -> Result<Option<Vec<Entry>>, YamlError> {
        if !self.is_map(map) {
            return Ok(None);
        }
        let entries =
            self.merged_entries(map, &self.budget, Merges::Once, |k| Some(self.key_text(k)))?;
        Ok(Some(entries))
    }

    /// The value of `key` in a mapping, merge keys resolved. `None` when the node is not a
    /// mapping or has no such key.
    pub fn get(&self, map: NodeId, key: &str) -> Result<Option<NodeId>, YamlError> {
        Ok(self
            .entries(map)?
            .and_then(|entries| entries.into_iter().find(|e| e.key == key))
            .map(|e| e.value))
    }

    /// [`Stream::get`] on a reached mapping: the value as reached from it.
    pub fn lookup(&self, map: Reached, key: &str) -> Result<Option<Reached>, YamlError> {
        Ok(self
            .entries(map.id)?
            .and_then(|entries| entries.into_iter().find(|e| e.key == key))
            .map(|e| self.reach(map, e.via, e.value)))
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
        let (a, b) = (path(&s, 0, &["a"]).unwrap(), path(&s, 0, &["b"]).unwrap());
        // The alias is a node of its own, at the `*x`, naming the anchor's node.
        assert_eq!(s.resolve(b), a);
        assert_eq!(s.pos(b), Pos { line: 2, column: 4 });
        assert_eq!(path(&s, 0, &["b", "k"]), path(&s, 0, &["a", "k"]));
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
    fn lookups_say_where_a_value_is_used() {
        let s = Stream::load(
            "base: &b {image: a, pull: x}\nc:\n  <<: *b\n  image: own\nd: {<<: [{k: v}, *b]}\ne: *b\n",
        )
        .unwrap();
        let root = s.reach_root(s.documents[0].root.unwrap());
        let used = |keys: &[&str]| {
            let mut node = root;
            for k in keys {
                node = s.lookup(node, k).unwrap().unwrap();
            }
            (s.used(node), s.written_note(node))
        };
        let at = |line, column| Pos { line, column };
        let none = String::new();
        assert_eq!(used(&["c", "image"]), (at(4, 10), none.clone()));
        assert_eq!(
            used(&["c", "pull"]),
            (at(3, 7), " (written at 1:27)".to_owned())
        );
        // Through an inline merge: where it is written; through `*b`: at the `*b`.
        assert_eq!(used(&["d", "k"]), (at(5, 14), none.clone()));
        assert_eq!(
            used(&["d", "image"]),
            (at(5, 18), " (written at 1:18)".to_owned())
        );
        // Inside an aliased mapping: at the alias of the mapping.
        assert_eq!(
            used(&["e", "image"]),
            (at(6, 4), " (written at 1:18)".to_owned())
        );
        assert_eq!(used(&["base", "image"]), (at(1, 18), none));
        // A merged alias of something else than a mapping: the error is at the alias.
        let bad = Stream::load("x: &x [1]\na:\n  <<: [*x]\n").unwrap();
        let a = path(&bad, 0, &["a"]).unwrap();
        assert_eq!(
            bad.entries(a).unwrap_err().pos,
            Some(Pos { line: 3, column: 8 })
        );
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
