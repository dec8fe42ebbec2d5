//! A pipeline's YAML (or JSON) document, and the lookups the Vela reader makes on it.
//!
//! The node tree is [`crate::yaml`]'s. Architecture invariants, beyond that module's:
//! - Every walk over the tree spends from a [`Budget`], so an alias or merge bomb costs no
//!   unbounded time.
//! - Merge keys (`<<: *a`, `<<: [*a, *b]`) are resolved on lookup by [`crate::yaml`]'s
//!   walk, as the YAML merge type says (a mapping's own keys win over merged ones, and
//!   earlier merged mappings win over later ones), on every path as go-yaml expands them.
//! - Lookups take and give [`Reached`] nodes, so that a value found through an alias (itself
//!   one, in a mapping reached through one, or merged in through one) is used at that alias,
//!   as [`crate::yaml`] says; [`Stream::pos`] still says where a node is written.
//! - A key written twice in one mapping is kept, the first one on [`Doc::duplicate`]:
//!   go-yaml v3 (which Vela uses) refuses it only in a mapping it decodes, naming both
//!   places ([`crate::decode`]); a compiled build is refused with one anywhere
//!   ([`crate::pipeline`]); a merge key (`<<`) may appear several times.
//! - Only the first document is built; the documents after it are only scanned, so that
//!   a caller can say they are not read.

use std::ops::Deref;

pub(crate) use crate::yaml::{Budget, LoadError, LookupError, NodeId, Pos, Reached};
use crate::yaml::{Merges, Stream, Value};

/// Most mapping entries and merge steps a whole read may look at.
pub(crate) const BUDGET: usize = 4_000_000;

/// One document: the first of a YAML stream, or a JSON document. Derefs to its
/// [`Stream`] for the nodes and their accessors.
#[derive(Debug)]
pub(crate) struct Doc {
    stream: Stream,
    /// `None` for an empty stream.
    pub root: Option<NodeId>,
}

impl Deref for Doc {
    type Target = Stream;

    fn deref(&self) -> &Stream {
        &self.stream
    }
}

impl Doc {
    /// Loads the first document of a YAML stream. Later documents are not read, as
    /// upstream's YAML decoding does not read them either; where they start is kept in
    /// [`Stream::ignored_documents`], and a syntax error inside one is not an error.
    ///
    /// A key written twice in one mapping is kept, the first one on
    /// [`Doc::duplicate`]: go-yaml v3 refuses it only in a mapping it decodes
    /// ([`crate::decode`]), a compiled build wherever it is ([`crate::pipeline`]).
    pub fn load_yaml(text: &str) -> Result<Doc, LoadError> {
        Stream::load_first_keeping_duplicates(text).map(Doc::new)
    }

    /// The first key written twice in one mapping of the document, at the second
    /// (`duplicate key "k" (first at L:C)`); always `None` for JSON, which
    /// [`Doc::load_json`] refuses.
    pub fn duplicate(&self) -> Option<&LoadError> {
        self.stream.documents.first()?.duplicate.as_ref()
    }

    /// Loads JSON without positions, for JSON that the YAML parser refuses. A key written
    /// twice in one object is an error, as in YAML.
    pub fn load_json(text: &str) -> Result<Doc, LoadError> {
        Stream::load_json(text).map(Doc::new)
    }

    /// A document already built ([`crate::gojson`]'s compiled build): its first.
    pub fn from_stream(stream: Stream) -> Doc {
        Doc::new(stream)
    }

    fn new(stream: Stream) -> Doc {
        Doc {
            root: stream.documents.first().and_then(|d| d.root),
            stream,
        }
    }

    /// What the node is, for messages: `null`, `list`, `mapping`, or for a scalar what
    /// go.yaml.in/yaml/v3 resolves it to ([`crate::resolve`]): `number` (`!!int`,
    /// `!!float`), `boolean` (`true`, not `yes`), `timestamp`, `string`.
    pub fn kind_name(&self, id: NodeId) -> &'static str {
        use crate::resolve::{Resolved, resolve_node};
        match self.value(id) {
            Value::Null => "null",
            Value::Scalar { .. } => match resolve_node(self, id).unwrap_or(Resolved::Str) {
                Resolved::Int(_) | Resolved::Uint(_) | Resolved::Float(_) => "number",
                Resolved::Bool => "boolean",
                Resolved::Timestamp => "timestamp",
                Resolved::Null => "null",
                Resolved::Merge | Resolved::Str => "string",
            },
            // `value` looks through aliases; kept for completeness.
            Value::Alias(_) => "alias",
            Value::Seq(_) => "list",
            Value::Map(_) => "mapping",
        }
    }

    /// The text of a string key (not a merge key), for lookups.
    fn string_key(&self, key: NodeId) -> Option<&str> {
        match self.value(key) {
            Value::Scalar {
                text, merge: false, ..
            } => Some(text),
            _ => None,
        }
    }

    /// The value of `key` in mapping `map`, merge keys included (on every path, as go-yaml
    /// expands them: [`Merges::EveryPath`]), as reached from `map`. A key written twice in
    /// one mapping takes its last value.
    pub fn get(
        &self,
        map: Reached,
        key: &str,
        budget: &Budget,
    ) -> Result<Option<Reached>, LookupError> {
        if !self.is_map(map.id) {
            return Ok(None);
        }
        self.walk_merged(map.id, budget, Merges::EveryPath, |entries, via| {
            budget.spend(entries.len())?;
            Ok(entries
                .iter()
                .rev()
                .find(|&&(k, _)| self.string_key(k) == Some(key))
                .map(|&(_, v)| self.reach(map, via, v)))
        })
    }

    /// All entries of mapping `map` with a string key, merge keys resolved
    /// ([`Stream::merged_entries`]), in order: its own keys as written (a repeated key in
    /// its first place, with its last value), then merged keys it does not have, in merge
    /// order. Values as reached from `map`.
    pub fn entries(
        &self,
        map: Reached,
        budget: &Budget,
    ) -> Result<Vec<(String, Reached)>, LookupError> {
        let entries = self.merged_entries(map.id, budget, Merges::EveryPath, |k| {
            self.string_key(k).map(str::to_owned)
        })?;
        Ok(entries
            .into_iter()
            .map(|e| (e.key, self.reach(map, e.via, e.value)))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::MAX_DEPTH;

    fn load(text: &str) -> Doc {
        Doc::load_yaml(text).expect("loads")
    }

    /// The duplicate key the document records (it is loaded all the same).
    fn dup(text: &str) -> LoadError {
        load(text).duplicate().cloned().expect("a duplicate key")
    }

    fn reach_path(doc: &Doc, path: &[&str]) -> Option<Reached> {
        let budget = Budget::new(BUDGET);
        let mut node = doc.reach_root(doc.root?);
        for key in path {
            node = doc.get(node, key, &budget).expect("lookup")?;
        }
        Some(node)
    }

    fn get_path(doc: &Doc, path: &[&str]) -> Option<NodeId> {
        reach_path(doc, path).map(|r| r.id)
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
        // The merged value is written inside the anchor, and used where `c` merges it in
        // (`*a` in `<<: [*a, *b]`).
        let z = reach_path(&doc, &["c", "z"]).unwrap();
        assert_eq!(
            doc.pos(z.id),
            Some(Pos {
                line: 1,
                column: 23
            })
        );
        assert_eq!(doc.used_pos(z), Some(Pos { line: 5, column: 8 }));
        // An own value is used where it is written.
        let x = reach_path(&doc, &["c", "x"]).unwrap();
        assert_eq!(x.via, None);
        assert_eq!(doc.used_pos(x), Some(Pos { line: 4, column: 6 }));

        let budget = Budget::new(BUDGET);
        let c = reach_path(&doc, &["c"]).unwrap();
        let keys: Vec<String> = doc
            .entries(c, &budget)
            .unwrap()
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(keys, ["x", "y", "z", "w"]);
    }

    #[test]
    fn aliased_values_are_used_at_the_alias() {
        let text = "\
a: &img alpine
b: *img
s: &s {image: x, n: {m: y}}
t: *s
u: [*s]
v: {<<: *s, own: z}
";
        let doc = load(text);
        let at = |line, column| Some(Pos { line, column });
        // A scalar alias: written in the anchor, used at the alias.
        let b = reach_path(&doc, &["b"]).unwrap();
        assert_eq!(doc.text(b.id), Some("alpine"));
        assert!(doc.is_alias(b.id));
        assert_eq!(doc.pos(b.id), at(2, 4));
        assert_eq!(doc.used_pos(b), at(2, 4));
        assert_eq!(doc.written_pos(b.id), at(1, 9));
        // The anchor's own node is no alias.
        let a = reach_path(&doc, &["a"]).unwrap();
        assert_eq!((a.via, doc.used_pos(a)), (None, at(1, 9)));
        // Inside an aliased mapping, however deep: at the alias of the mapping.
        let image = reach_path(&doc, &["t", "image"]).unwrap();
        assert_eq!(doc.text(image.id), Some("x"));
        assert_eq!(doc.pos(image.id), at(3, 15));
        assert_eq!(doc.used_pos(image), at(4, 4));
        let m = reach_path(&doc, &["t", "n", "m"]).unwrap();
        assert_eq!(doc.used_pos(m), at(4, 4));
        // Through the original: where it is written.
        let m = reach_path(&doc, &["s", "n", "m"]).unwrap();
        assert_eq!(doc.used_pos(m), at(3, 25));
        // An item of a list, and a merged value.
        let budget = Budget::new(BUDGET);
        let u = reach_path(&doc, &["u"]).unwrap();
        let item = doc.reach(u, None, doc.items(u.id).unwrap()[0]);
        let image = doc.get(item, "image", &budget).unwrap().unwrap();
        assert_eq!(doc.used_pos(image), at(5, 5));
        let image = reach_path(&doc, &["v", "image"]).unwrap();
        assert_eq!(doc.used_pos(image), at(6, 9));
        let own = reach_path(&doc, &["v", "own"]).unwrap();
        assert_eq!(doc.used_pos(own), at(6, 18));
        let entries = doc.entries(reach_path(&doc, &["v"]).unwrap(), &budget);
        let used: Vec<(String, Option<Pos>)> = entries
            .unwrap()
            .into_iter()
            .map(|(k, r)| (k, doc.used_pos(r)))
            .collect();
        assert_eq!(
            used,
            [
                ("own".to_owned(), at(6, 18)),
                ("image".to_owned(), at(6, 9)),
                ("n".to_owned(), at(6, 9)),
            ]
        );
    }

    #[test]
    fn an_aliased_key_is_a_duplicate_at_the_alias() {
        let err = dup("x: &k dup\nm:\n  dup: 1\n  *k : 2\n");
        assert_eq!(err.pos, Some(Pos { line: 4, column: 3 }));
        assert_eq!(err.message, "duplicate key \"dup\" (first at 3:3)");
        // An aliased mapping is checked where it is written, once.
        let err = dup("a: &a {k: 1, k: 2}\nb: *a\n");
        assert_eq!(
            err.pos,
            Some(Pos {
                line: 1,
                column: 14
            })
        );
        assert_eq!(err.message, "duplicate key \"k\" (first at 1:8)");
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
        let budget = Budget::new(BUDGET);
        let a = reach_path(&doc, &["a"]).unwrap();
        assert_eq!(
            doc.get(a, "x", &budget),
            Err(LookupError::BadMerge(Some(Pos { line: 2, column: 7 })))
        );
        // A merged alias of something else than a mapping: at the alias.
        let doc = load("x: &x [1]\na:\n  <<: [*x]\n");
        let a = reach_path(&doc, &["a"]).unwrap();
        assert_eq!(
            doc.get(a, "y", &budget),
            Err(LookupError::BadMerge(Some(Pos { line: 3, column: 8 })))
        );
        let doc = load("x: &x [1]\na:\n  <<: *x\n");
        let a = reach_path(&doc, &["a"]).unwrap();
        assert_eq!(
            doc.get(a, "y", &budget),
            Err(LookupError::BadMerge(Some(Pos { line: 3, column: 7 })))
        );
    }

    #[test]
    fn a_duplicate_key_is_an_error_at_the_second_naming_the_first() {
        let err = dup("a: 1\nb: 2\n'a': 3\n");
        assert_eq!(err.pos, Some(Pos { line: 3, column: 1 }));
        assert_eq!(err.message, "duplicate key \"a\" (first at 1:1)");
        // Merge keys may repeat; a quoted `<<` is a plain key.
        let doc = load("x: &x {k: 1}\ny: &y {j: 2}\nz:\n  <<: *x\n  <<: *y\n  '<<': q\n");
        assert_eq!(doc.text(get_path(&doc, &["z", "j"]).unwrap()), Some("2"));
        assert!(load("z: {'<<': 1, \"<<\": 2}\n").duplicate().is_some());
        // Keys in different mappings, or a key and a merged key, are not duplicates.
        assert!(load("- {a: 1}\n- {a: 2}\n").duplicate().is_none());
        assert!(
            load("x: &x {a: 1}\ny: {<<: *x, a: 2}\n")
                .duplicate()
                .is_none()
        );
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
        let last = reach_path(&doc, &["m59"]).unwrap();
        let budget = Budget::new(100_000);
        assert_eq!(
            doc.get(last, "missing", &budget),
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
