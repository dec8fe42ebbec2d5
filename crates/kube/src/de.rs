//! A serde `Deserializer` over a positioned YAML node, strict like upstream's
//! `sigs.k8s.io/yaml.UnmarshalStrict`.
//!
//! - Every struct is checked against the field names its `Deserialize` impl declares, so an
//!   unknown field is an error naming the field, its path and its line and column. This works
//!   for our own types and for `k8s-openapi`'s alike (those ignore unknown fields when read
//!   from JSON, but declare their field names to the deserializer).
//! - A key written twice in one mapping is an error, as in strict YAML decoding.
//! - Scalars get the types Go's YAML→JSON conversion gives them where the target asks for a
//!   string: `foo: 1` is the string `"1"` for a string field. A quoted scalar is never a
//!   number or a boolean. A null is the zero value, as Go's JSON decoding leaves it.
//! - Every error carries the position of the innermost node it concerns, where that node is
//!   used: for a node reached through an alias, at the first alias on the way to it (as
//!   [`pullcheck_input::yaml`] says), with where it is written in the message
//!   (`(written at 3:5)`). A duplicate key is at the key where it is written.
//! - Each node visited spends from the stream's budget, so aliases cannot make it unbounded.

use std::fmt;

use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};

use crate::yaml::{Entry, NodeId, Pos, Reached, Stream, Value, YamlError};

/// An error with the path (`spec.template.spec`) and position of the node it concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DeError {
    pub message: String,
    pub path: Option<String>,
    pub pos: Option<Pos>,
}

impl DeError {
    fn at(mut self, path: &str, pos: Pos) -> DeError {
        if self.pos.is_none() {
            self.pos = Some(pos);
            if !path.is_empty() {
                self.path = Some(path.to_owned());
            }
        }
        self
    }
}

impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.path {
            Some(path) => write!(f, "{path}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for DeError {}

impl de::Error for DeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        DeError {
            message: msg.to_string(),
            path: None,
            pos: None,
        }
    }
}

/// Deserializes `T` from node `id`, strictly.
pub(crate) fn from_node<'s, T: de::Deserialize<'s>>(
    stream: &'s Stream,
    id: NodeId,
) -> Result<T, DeError> {
    T::deserialize(NodeDe {
        stream,
        id,
        via: stream.reach_root(id).via,
        path: String::new(),
    })
}

/// The field names `T`'s `Deserialize` declares (`k8s-openapi`'s types declare theirs),
/// found by asking it to deserialize from a deserializer that only records them. Empty for
/// a type that declares none.
pub(crate) fn field_names<T: de::DeserializeOwned>() -> &'static [&'static str] {
    struct Capture<'a>(&'a mut &'static [&'static str]);
    impl<'de> de::Deserializer<'de> for Capture<'_> {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("field names only"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            _visitor: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = fields;
            Err(de::Error::custom("field names only"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Capture(&mut fields));
    fields
}

struct NodeDe<'s> {
    stream: &'s Stream,
    id: NodeId,
    /// The first alias on the way from the root to `id`, `id` included.
    via: Option<NodeId>,
    path: String,
}

impl<'s> NodeDe<'s> {
    fn value(&self) -> &'s Value {
        self.stream.value(self.id)
    }

    fn reached(&self) -> Reached {
        Reached {
            id: self.id,
            via: self.via,
        }
    }

    /// Where the node is used.
    fn pos(&self) -> Pos {
        self.stream.used(self.reached())
    }

    /// A deserializer for `child`, found in this node (through `merged_via`, for a merged
    /// entry), at `path`.
    fn child(&self, merged_via: Option<NodeId>, child: NodeId, path: String) -> NodeDe<'s> {
        NodeDe {
            stream: self.stream,
            id: child,
            via: self.stream.reach(self.reached(), merged_via, child).via,
            path,
        }
    }

    /// `e` at this node, unless it already has a position: where the node is used, naming
    /// where it is written when that is elsewhere.
    fn place(&self, e: DeError) -> DeError {
        if e.pos.is_some() {
            return e;
        }
        let mut e = e.at(&self.path, self.pos());
        e.message
            .push_str(&self.stream.written_note(self.reached()));
        e
    }

    fn spend(&self) -> Result<(), DeError> {
        self.stream
            .budget
            .spend(1)
            .map_err(|e| de::Error::custom(YamlError::from(e).message))
    }

    fn locate<T>(&self, result: Result<T, DeError>) -> Result<T, DeError> {
        result.map_err(|e| self.place(e))
    }

    fn invalid(&self, expected: &str) -> DeError {
        let found = match self.value() {
            Value::Null => "null".to_owned(),
            // Named by its kind, never its text: a file's values stay out of errors.
            Value::Scalar { .. } => "a scalar".to_owned(),
            Value::Seq(_) => "a list".to_owned(),
            Value::Map(_) => "a mapping".to_owned(),
            // `value` looks through aliases; kept for completeness.
            Value::Alias(_) => "an alias".to_owned(),
        };
        self.place(DeError {
            message: format!("expected {expected}, found {found}"),
            path: None,
            pos: None,
        })
    }

    /// The mapping's entries, merge keys resolved, after checking for keys written twice
    /// (the stream records them too; this keeps the deserializer strict on its own).
    fn map_entries(&self) -> Result<Vec<Entry>, DeError> {
        if let Some(dup) = self
            .stream
            .own_entries(self.id)
            .and_then(|own| self.stream.duplicate_key(own))
        {
            let err = DeError {
                message: dup.message,
                path: None,
                pos: None,
            };
            return Err(match dup.pos {
                Some(pos) => err.at(&self.path, pos),
                None => err,
            });
        }
        let entries = self
            .stream
            .entries(self.id)
            .map_err(|e| DeError {
                message: e.message,
                path: None,
                pos: e.pos,
            })?
            .unwrap_or_default();
        Ok(entries)
    }

    fn child_path(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    fn visit_map_entries<V: Visitor<'s>>(
        &self,
        entries: Vec<Entry>,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        visitor.visit_map(Entries {
            de: self,
            entries: entries.into_iter(),
            pending: None,
        })
    }

    fn scalar(&self) -> Option<(&'s str, bool)> {
        match self.value() {
            Value::Scalar { text, plain, .. } => Some((text, *plain)),
            _ => None,
        }
    }

    fn integer<T: std::str::FromStr>(&self, what: &str) -> Result<Option<T>, DeError> {
        match self.value() {
            Value::Null => Ok(None),
            Value::Scalar {
                text, plain: true, ..
            } => {
                let cleaned = text.strip_prefix('+').unwrap_or(text).replace('_', "");
                cleaned
                    .parse::<T>()
                    .map(Some)
                    .map_err(|_| self.invalid(what))
            }
            _ => Err(self.invalid(what)),
        }
    }
}

/// The YAML 1.1 booleans Go's YAML decoder resolves (`sigs.k8s.io/yaml` uses it).
fn yaml_bool(text: &str) -> Option<bool> {
    match text {
        "true" | "True" | "TRUE" | "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => {
            Some(true)
        }
        "false" | "False" | "FALSE" | "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => {
            Some(false)
        }
        _ => None,
    }
}

macro_rules! integer_methods {
    ($($method:ident => $ty:ty, $visit:ident;)*) => {
        $(
            fn $method<V: Visitor<'s>>(self, visitor: V) -> Result<V::Value, DeError> {
                self.spend()?;
                let value = self.integer::<$ty>("an integer")?.unwrap_or_default();
                self.locate(visitor.$visit(value))
            }
        )*
    };
}

impl<'s> de::Deserializer<'s> for NodeDe<'s> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'s>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.spend()?;
        let result = match self.value() {
            Value::Null => visitor.visit_unit(),
            Value::Scalar {
                text, plain: true, ..
            } => {
                if let Some(b) = matches!(text.as_str(), "true" | "True" | "TRUE")
                    .then_some(true)
                    .or_else(|| {
                        matches!(text.as_str(), "false" | "False" | "FALSE").then_some(false)
                    })
                {
                    visitor.visit_bool(b)
                } else if let Ok(i) = text.parse::<i64>() {
                    visitor.visit_i64(i)
                } else if let Ok(f) = text.parse::<f64>()
                    && text.chars().any(|c| c.is_ascii_digit())
                {
                    visitor.visit_f64(f)
                } else {
                    visitor.visit_str(text)
                }
            }
            Value::Scalar { text, .. } => visitor.visit_str(text),
            Value::Seq(_) => return self.deserialize_seq(visitor),
            Value::Map(_) => return self.deserialize_map(visitor),
            // `value` looks through aliases; kept for completeness.
            Value::Alias(_) => return Err(self.invalid("a value")),
        };
        self.locate(result)
    }

    fn deserialize_bool<V: Visitor<'s>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.spend()?;
        let value = match self.value() {
            Value::Null => false,
            Value::Scalar {
                text, plain: true, ..
            } => yaml_bool(text).ok_or_else(|| self.invalid("true or false"))?,
            _ => return Err(self.invalid("true or false")),
        };
        self.locate(visitor.visit_bool(value))
    }

    integer_methods! {
        deserialize_i8 => i8, visit_i8;
        deserialize_i16 => i16, visit_i16;
        deserialize_i32 => i32, visit_i32;
        deserialize_i64 => i64, visit_i64;
        deserialize_u8 => u8, visit_u8;
        deserialize_u16 => u16, visit_u16;
        deserialize_u32 => u32, visit_u32;
        deserialize_u64 => u64, visit_u64;
        deserialize_f32 => f32, visit_f32;
        deserialize_f64 => f64, visit_f64;
    }

    fn deserialize_char<V: Visitor<'s>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_str<V: Visitor<'s>>(self, visitor: V) -> Result<V::Value, DeError> {
        // A string is copied out each time it is visited: an aliased long string costs in
        // proportion to its length.
        if let Value::Scalar { text, .. } = self.value() {
            self.stream
                .budget
                .spend(text.len() / 8)
                .map_err(|e| de::Error::custom(YamlError::from(e).message))?;
        }
        self.spend()?;
        let result = match self.value() {
            Value::Null => visitor.visit_str(""),
            Value::Scalar { text, .. } => visitor.visit_str(text),
            _ => return Err(self.invalid("a string")),
        };
        self.locate(result)
    }

    fn deserialize_string<V: Visitor<'s>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'s>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_byte_buf<V: Visitor<'s>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_option<V: Visitor<'s>>(self, visitor: V) -> Result<V::Value, DeError> {
        if self.stream.is_null(self.id) {
            self.spend()?;
            return self.locate(visitor.visit_none());
        }
        visitor.visit_some(self)
    }

    fn deserialize_unit<V: Visitor<'s>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.spend()?;
        self.locate(visitor.visit_unit())
    }

    fn deserialize_unit_struct<V: Visitor<'s>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'s>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'s>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.spend()?;
        let items: &'s [NodeId] = match self.value() {
            Value::Null => &[],
            Value::Seq(items) => items,
            _ => return Err(self.invalid("a list")),
        };
        let result = visitor.visit_seq(Items {
            de: &self,
            items: items.iter().enumerate(),
        });
        self.locate(result)
    }

    fn deserialize_tuple<V: Visitor<'s>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'s>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'s>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.spend()?;
        let entries = match self.value() {
            Value::Null => Vec::new(),
            Value::Map(_) => self.map_entries()?,
            _ => return Err(self.invalid("a mapping")),
        };
        let result = self.visit_map_entries(entries, visitor);
        self.locate(result)
    }

    fn deserialize_struct<V: Visitor<'s>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.spend()?;
        let entries = match self.value() {
            Value::Null => Vec::new(),
            Value::Map(_) => self.map_entries()?,
            _ => return Err(self.invalid(&format!("a mapping ({name})"))),
        };
        for entry in &entries {
            if !fields.contains(&entry.key.as_str()) {
                let mut known: Vec<&str> = fields.to_vec();
                known.sort_unstable();
                let key = self.child(entry.via, entry.key_node, self.child_path(&entry.key));
                return Err(key.place(DeError {
                    message: format!(
                        "unknown field {:?}; known fields here: {}",
                        entry.key,
                        known.join(", ")
                    ),
                    path: None,
                    pos: None,
                }));
            }
        }
        let result = self.visit_map_entries(entries, visitor);
        self.locate(result)
    }

    fn deserialize_enum<V: Visitor<'s>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.spend()?;
        let Some((text, _)) = self.scalar() else {
            return Err(self.invalid("a string"));
        };
        let result = visitor.visit_enum(text.into_deserializer());
        self.locate(result)
    }

    fn deserialize_identifier<V: Visitor<'s>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'s>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_unit()
    }
}

struct Entries<'a, 's> {
    de: &'a NodeDe<'s>,
    entries: std::vec::IntoIter<Entry>,
    pending: Option<Entry>,
}

impl<'s> MapAccess<'s> for Entries<'_, 's> {
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'s>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        let Some(entry) = self.entries.next() else {
            return Ok(None);
        };
        let key = self
            .de
            .child(entry.via, entry.key_node, self.de.path.clone());
        let value = seed.deserialize(key)?;
        self.pending = Some(entry);
        Ok(Some(value))
    }

    fn next_value_seed<V: DeserializeSeed<'s>>(&mut self, seed: V) -> Result<V::Value, DeError> {
        let Some(entry) = self.pending.take() else {
            return Err(de::Error::custom("a value was asked for before its key"));
        };
        seed.deserialize(
            self.de
                .child(entry.via, entry.value, self.de.child_path(&entry.key)),
        )
    }
}

struct Items<'a, 's, I> {
    de: &'a NodeDe<'s>,
    items: I,
}

impl<'s, 'n, I: Iterator<Item = (usize, &'n NodeId)>> SeqAccess<'s> for Items<'_, 's, I> {
    type Error = DeError;

    fn next_element_seed<T: DeserializeSeed<'s>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DeError> {
        let Some((index, &id)) = self.items.next() else {
            return Ok(None);
        };
        seed.deserialize(
            self.de
                .child(None, id, format!("{}[{index}]", self.de.path)),
        )
        .map(Some)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[derive(Debug, serde::Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase")]
    struct Inner {
        name: String,
        #[serde(default)]
        count: Option<i32>,
        #[serde(default)]
        on: Option<bool>,
    }

    #[derive(Debug, serde::Deserialize, PartialEq)]
    struct Outer {
        #[serde(default)]
        labels: BTreeMap<String, String>,
        #[serde(default)]
        items: Vec<Inner>,
    }

    fn parse<T: for<'de> serde::Deserialize<'de>>(text: &str) -> Result<T, DeError> {
        let stream = Stream::load(text).expect("yaml");
        let root = stream.documents[0].root.expect("root");
        from_node(&stream, root)
    }

    #[test]
    fn scalars_take_the_type_the_field_asks_for() {
        let outer: Outer = parse(
            "labels: {a: 1, b: true, c: '2', d: ~}\nitems:\n- {name: 5, count: 3, on: yes}\n",
        )
        .unwrap();
        assert_eq!(outer.labels["a"], "1");
        assert_eq!(outer.labels["b"], "true");
        assert_eq!(outer.labels["c"], "2");
        assert_eq!(outer.labels["d"], "");
        assert_eq!(
            outer.items,
            [Inner {
                name: "5".into(),
                count: Some(3),
                on: Some(true)
            }]
        );
        let err = parse::<Outer>("items:\n- {name: x, count: '3'}\n").unwrap_err();
        assert_eq!(
            err.pos,
            Some(Pos {
                line: 2,
                column: 20
            }),
            "{err:?}"
        );
        assert_eq!(err.path.as_deref(), Some("items[0].count"));
    }

    #[test]
    fn unknown_fields_are_named_with_path_and_position() {
        let err = parse::<Outer>("items:\n  - name: x\n    colour: red\n").unwrap_err();
        assert_eq!(err.pos, Some(Pos { line: 3, column: 5 }));
        assert_eq!(err.path.as_deref(), Some("items[0].colour"));
        assert!(err.message.contains("unknown field \"colour\""), "{err}");
        assert!(err.message.contains("count, name, on"), "{err}");
    }

    #[test]
    fn duplicate_keys_are_errors() {
        let err = parse::<Outer>("labels: {}\nlabels: {a: b}\n").unwrap_err();
        assert_eq!(err.pos, Some(Pos { line: 2, column: 1 }));
        assert_eq!(err.message, "duplicate key \"labels\" (first at 1:1)");
    }

    #[test]
    fn wrong_shapes_point_at_the_node() {
        let err = parse::<Outer>("labels:\n  - name: a\n").unwrap_err();
        assert_eq!(err.pos, Some(Pos { line: 2, column: 3 }), "{err:?}");
        assert!(err.message.contains("expected a mapping"), "{err}");
        let err = parse::<Outer>("items:\n- {}\n").unwrap_err();
        assert!(err.message.contains("missing field `name`"), "{err}");
        assert_eq!(err.pos, Some(Pos { line: 2, column: 3 }), "{err:?}");
    }

    #[test]
    fn errors_inside_aliased_content_are_at_the_alias() {
        // `- *l` makes an item of the labels: its unknown key is reported where the item
        // uses it, naming where it is written.
        let err = parse::<Outer>("labels: &l {a: b}\nitems:\n- *l\n").unwrap_err();
        assert_eq!(err.pos, Some(Pos { line: 3, column: 3 }), "{err:?}");
        assert_eq!(err.path.as_deref(), Some("items[0].a"));
        assert_eq!(
            err.message,
            "unknown field \"a\"; known fields here: count, name, on (written at 1:13)"
        );
        // A wrong value merged in: at the `*c` that merges it.
        let err = parse::<Outer>("labels: &c {name: a, count: x}\nitems:\n- {<<: *c}\n");
        let err = err.unwrap_err();
        assert_eq!(err.path.as_deref(), Some("items[0].count"));
        assert_eq!(err.pos, Some(Pos { line: 3, column: 8 }), "{err:?}");
        assert!(err.message.ends_with(" (written at 1:29)"), "{err:?}");
    }

    #[test]
    fn merge_keys_and_aliases_deserialize() {
        let outer: Outer =
            parse("items:\n- &i {name: a, count: 1}\n- {<<: *i, name: b}\n").unwrap();
        assert_eq!(outer.items[1].name, "b");
        assert_eq!(outer.items[1].count, Some(1));
    }
}
