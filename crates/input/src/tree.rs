//! A pipeline's YAML (or JSON) document, and the lookups the Vela reader makes on it.
//!
//! The node tree is [`crate::yaml`]'s. Architecture invariants, beyond that module's:
//! - Every walk over the tree spends from a [`Budget`], so an alias or merge bomb costs no
//!   unbounded time.
//! - Merge keys (`<<: *a`, `<<: [*a, *b]`) are resolved on lookup, as the YAML merge type
//!   says: a mapping's own keys win over merged ones, and earlier merged mappings win over
//!   later ones.
//! - Lookups take and give [`Reached`] nodes, so that a value found through an alias (itself
//!   one, in a mapping reached through one, or merged in through one) is used at that alias,
//!   as [`crate::yaml`] says; [`Stream::pos`] still says where a node is written.
//! - A key written twice in one mapping is a load error naming both places, as go-yaml v3
//!   (which Vela uses) rejects it; a merge key (`<<`) may appear several times.
//! - Only the first document is built; the documents after it are only scanned, so that
//!   a caller can say they are not read.

use std::collections::HashMap;
use std::ops::Deref;

pub(crate) use crate::yaml::{LoadError, NodeId, Pos, Reached};
use crate::yaml::{Stream, Value};

/// Most mapping entries and merge steps a whole read may look at.
pub(crate) const BUDGET: usize = 4_000_000;

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
    pub fn load_yaml(text: &str) -> Result<Doc, LoadError> {
        Stream::load_first(text).map(Doc::new)
    }

    /// Loads JSON without positions, for JSON that the YAML parser refuses. A key written
    /// twice in one object is an error, as in YAML.
    pub fn load_json(text: &str) -> Result<Doc, LoadError> {
        Stream::load_json(text).map(Doc::new)
    }

    fn new(stream: Stream) -> Doc {
        Doc {
            root: stream.documents.first().and_then(|d| d.root),
            stream,
        }
    }

    /// What the node is, for messages: `null`, `string`, `list` or `mapping`.
    pub fn kind_name(&self, id: NodeId) -> &'static str {
        match self.value(id) {
            Value::Null => "null",
            Value::Scalar { .. } => "string",
            // `value` looks through aliases; kept for completeness.
            Value::Alias(_) => "alias",
            Value::Seq(_) => "list",
            Value::Map(_) => "mapping",
        }
    }

    /// The mappings whose keys `map` has, in priority order: `map` itself, then what its
    /// `<<` keys merge in, depth first. Calls `visit` on each in turn, with the first alias
    /// among the merge keys followed to it (`None` for `map` itself), until it returns
    /// `Some`. `map` must be a mapping.
    fn walk_merged<T>(
        &self,
        map: NodeId,
        budget: &mut Budget,
        mut visit: impl FnMut(
            &[(NodeId, NodeId)],
            Option<NodeId>,
            &mut Budget,
        ) -> Result<Option<T>, LookupError>,
    ) -> Result<Option<T>, LookupError> {
        // (mapping, the first alias on the way to it from `map`).
        let mut stack = vec![(self.resolve(map), None)];
        let mut sources = Vec::new();
        let alias = |id: NodeId| self.is_alias(id).then_some(id);
        // A merge source that is not a mapping, at the first alias on the way to it.
        let bad =
            |via: Option<NodeId>, id: NodeId| LookupError::BadMerge(self.pos(via.unwrap_or(id)));
        while let Some((current, via)) = stack.pop() {
            budget.spend(1)?;
            let Value::Map(entries) = self.value(current) else {
                return Err(bad(via, current));
            };
            if let Some(found) = visit(entries, via, budget)? {
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

    /// The value of `key` in mapping `map`, merge keys included, as reached from `map`. A
    /// key written twice in one mapping takes its last value.
    pub fn get(
        &self,
        map: Reached,
        key: &str,
        budget: &mut Budget,
    ) -> Result<Option<Reached>, LookupError> {
        if !self.is_map(map.id) {
            return Ok(None);
        }
        self.walk_merged(map.id, budget, |entries, via, budget| {
            budget.spend(entries.len())?;
            Ok(entries
                .iter()
                .rev()
                .find(|&&(k, _)| {
                    matches!(self.value(k), Value::Scalar { text, merge: false, .. } if text == key)
                })
                .map(|&(_, v)| self.reach(map, via, v)))
        })
    }

    /// All entries of mapping `map` with a string key, merge keys resolved, in order: its
    /// own keys as written (a repeated key in its first place, with its last value), then
    /// merged keys it does not have, in merge order. Values as reached from `map`.
    pub fn entries(
        &self,
        map: Reached,
        budget: &mut Budget,
    ) -> Result<Vec<(String, Reached)>, LookupError> {
        let mut out: Vec<(String, Reached)> = Vec::new();
        if !self.is_map(map.id) {
            return Ok(out);
        }
        let mut seen: HashMap<String, usize> = HashMap::new();
        self.walk_merged::<()>(map.id, budget, |entries, via, budget| {
            budget.spend(entries.len())?;
            let mut own: HashMap<&str, usize> = HashMap::new();
            for &(k, v) in entries {
                let Value::Scalar {
                    text, merge: false, ..
                } = self.value(k)
                else {
                    continue;
                };
                let v = self.reach(map, via, v);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::MAX_DEPTH;

    fn load(text: &str) -> Doc {
        Doc::load_yaml(text).expect("loads")
    }

    fn reach_path(doc: &Doc, path: &[&str]) -> Option<Reached> {
        let mut budget = Budget::new(BUDGET);
        let mut node = doc.reach_root(doc.root?);
        for key in path {
            node = doc.get(node, key, &mut budget).expect("lookup")?;
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

        let mut budget = Budget::new(BUDGET);
        let c = reach_path(&doc, &["c"]).unwrap();
        let keys: Vec<String> = doc
            .entries(c, &mut budget)
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
        let mut budget = Budget::new(BUDGET);
        let u = reach_path(&doc, &["u"]).unwrap();
        let item = doc.reach(u, None, doc.items(u.id).unwrap()[0]);
        let image = doc.get(item, "image", &mut budget).unwrap().unwrap();
        assert_eq!(doc.used_pos(image), at(5, 5));
        let image = reach_path(&doc, &["v", "image"]).unwrap();
        assert_eq!(doc.used_pos(image), at(6, 9));
        let own = reach_path(&doc, &["v", "own"]).unwrap();
        assert_eq!(doc.used_pos(own), at(6, 18));
        let entries = doc.entries(reach_path(&doc, &["v"]).unwrap(), &mut budget);
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
        let err = Doc::load_yaml("x: &k dup\nm:\n  dup: 1\n  *k : 2\n").unwrap_err();
        assert_eq!(err.pos, Some(Pos { line: 4, column: 3 }));
        assert_eq!(err.message, "duplicate key \"dup\" (first at 3:3)");
        // An aliased mapping is checked where it is written, once.
        let err = Doc::load_yaml("a: &a {k: 1, k: 2}\nb: *a\n").unwrap_err();
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
        let mut budget = Budget::new(BUDGET);
        let a = reach_path(&doc, &["a"]).unwrap();
        assert_eq!(
            doc.get(a, "x", &mut budget),
            Err(LookupError::BadMerge(Some(Pos { line: 2, column: 7 })))
        );
        // A merged alias of something else than a mapping: at the alias.
        let doc = load("x: &x [1]\na:\n  <<: [*x]\n");
        let a = reach_path(&doc, &["a"]).unwrap();
        assert_eq!(
            doc.get(a, "y", &mut budget),
            Err(LookupError::BadMerge(Some(Pos { line: 3, column: 8 })))
        );
        let doc = load("x: &x [1]\na:\n  <<: *x\n");
        let a = reach_path(&doc, &["a"]).unwrap();
        assert_eq!(
            doc.get(a, "y", &mut budget),
            Err(LookupError::BadMerge(Some(Pos { line: 3, column: 7 })))
        );
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
        let last = reach_path(&doc, &["m59"]).unwrap();
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
