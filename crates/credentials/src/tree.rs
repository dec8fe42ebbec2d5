//! An ordered document tree for JSON and YAML input.
//!
//! Go's `encoding/json`, which the kubelet, the Docker CLI and containers/image use to
//! read every format in this crate, walks object members in document order and matches
//! field names case-insensitively. `serde_json::Value` sorts its maps, so this crate
//! reads into [`Node`], which keeps members in order, and decodes fields by hand
//! (`go_fields`).

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// One JSON (or YAML, after conversion) value, with object members in document order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    Null,
    Bool(bool),
    Number,
    String(String),
    Array(Vec<Node>),
    Object(Vec<(String, Node)>),
}

impl Node {
    /// What the value is, for messages that must not show the value itself.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Node::Null => "null",
            Node::Bool(_) => "a boolean",
            Node::Number => "a number",
            Node::String(_) => "a string",
            Node::Array(_) => "an array",
            Node::Object(_) => "an object",
        }
    }

    /// The member `name` (exact case), the last one if it repeats.
    pub(crate) fn get(&self, name: &str) -> Option<&Node> {
        match self {
            Node::Object(members) => members
                .iter()
                .rev()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// The string value of member `name`, if it is a string.
    pub(crate) fn get_str(&self, name: &str) -> Option<&str> {
        match self.get(name) {
            Some(Node::String(s)) => Some(s),
            _ => None,
        }
    }
}

/// Parses JSON text into a [`Node`].
pub(crate) fn parse_json(bytes: &[u8]) -> Result<Node, serde_json::Error> {
    serde_json::from_slice(bytes)
}

/// A JSON syntax error as a message with its position, never with input text: serde's
/// data errors can quote values, so only syntax and end-of-input messages are shown.
pub(crate) fn json_error_message(e: &serde_json::Error) -> String {
    format!(
        "line {} column {}: {}",
        e.line(),
        e.column(),
        json_error_what(e)
    )
}

/// What a JSON error says, without its position.
pub(crate) fn json_error_what(e: &serde_json::Error) -> String {
    use serde_json::error::Category;
    match e.classify() {
        Category::Syntax | Category::Eof => {
            // serde_json appends " at line L column C"; we print our own position.
            let text = e.to_string();
            match text.rfind(" at line ") {
                Some(i) => text[..i].to_string(),
                None => text,
            }
        }
        Category::Data => "unexpected value".to_string(),
        Category::Io => "cannot read input".to_string(),
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Node, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Node, E> {
        Ok(Node::Number)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Node, E> {
        Ok(Node::Number)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Node, E> {
        Ok(Node::Number)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Node, E> {
        Ok(Node::String(v.to_string()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Node, E> {
        Ok(Node::String(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Node>()? {
            items.push(item);
        }
        Ok(Node::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut members = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, Node>()? {
            members.push((k, v));
        }
        Ok(Node::Object(members))
    }
}

/// Converts a loaded YAML document into a [`Node`], as `sigs.k8s.io/yaml` (what
/// `kubectl` uses) turns YAML into JSON: scalar keys become strings, values keep their
/// core-schema type.
///
/// # Errors
/// A message (no input text) for a key that is a mapping or sequence, or an alias that
/// was not resolved.
pub(crate) fn from_yaml(yaml: &saphyr::YamlOwned) -> Result<Node, String> {
    use saphyr::{ScalarOwned, YamlOwned};
    Ok(match yaml {
        YamlOwned::Value(scalar) => match scalar {
            ScalarOwned::Null => Node::Null,
            ScalarOwned::Boolean(b) => Node::Bool(*b),
            ScalarOwned::Integer(_) | ScalarOwned::FloatingPoint(_) => Node::Number,
            ScalarOwned::String(s) => Node::String(s.clone()),
        },
        YamlOwned::Representation(text, _, _) => Node::String(text.clone()),
        YamlOwned::Tagged(_, inner) => from_yaml(inner)?,
        YamlOwned::Sequence(items) => {
            Node::Array(items.iter().map(from_yaml).collect::<Result<_, _>>()?)
        }
        YamlOwned::Mapping(map) => {
            let mut members = Vec::with_capacity(map.len());
            for (k, v) in map {
                members.push((yaml_key(k)?, from_yaml(v)?));
            }
            Node::Object(members)
        }
        YamlOwned::Alias(_) | YamlOwned::BadValue => {
            return Err("a YAML value could not be resolved".to_string());
        }
    })
}

fn yaml_key(key: &saphyr::YamlOwned) -> Result<String, String> {
    use saphyr::{ScalarOwned, YamlOwned};
    match key {
        YamlOwned::Value(ScalarOwned::String(s)) | YamlOwned::Representation(s, _, _) => {
            Ok(s.clone())
        }
        YamlOwned::Value(ScalarOwned::Null) => Ok("null".to_string()),
        YamlOwned::Value(ScalarOwned::Boolean(b)) => Ok(b.to_string()),
        YamlOwned::Value(ScalarOwned::Integer(i)) => Ok(i.to_string()),
        YamlOwned::Value(ScalarOwned::FloatingPoint(f)) => Ok(f.to_string()),
        YamlOwned::Tagged(_, inner) => yaml_key(inner),
        _ => Err("a mapping key is not a scalar".to_string()),
    }
}

/// Decodes the string fields `names` of a JSON object the way Go's `encoding/json`
/// fills a struct of `string` fields: members in document order, a name matches a field
/// exactly or ASCII-case-insensitively (Go also folds a few Unicode letters), a later
/// member overwrites an earlier one, `null` leaves the field as it was, and any other
/// non-string value is an error. Unknown members are ignored.
///
/// Returns one slot per name. `what` names the object in errors (e.g. `auths["quay.io"]`).
///
/// # Errors
/// `"<what>: field \`x\` is a number, not a string"` and the like; never a value.
pub(crate) fn go_fields<const N: usize>(
    node: &Node,
    names: [&str; N],
    what: &str,
) -> Result<[Option<String>; N], String> {
    let mut out: [Option<String>; N] = std::array::from_fn(|_| None);
    let members = match node {
        Node::Null => return Ok(out),
        Node::Object(members) => members,
        other => return Err(format!("{what} is {}, not an object", other.kind())),
    };
    for (key, value) in members {
        let Some(slot) = go_field_index(&names, key) else {
            continue;
        };
        match value {
            Node::Null => {}
            Node::String(s) => out[slot] = Some(s.clone()),
            other => {
                return Err(format!(
                    "{what}: field `{}` is {}, not a string",
                    names[slot],
                    other.kind()
                ));
            }
        }
    }
    Ok(out)
}

/// Which of `names` a JSON member name fills under Go's rules: an exact match first,
/// else an ASCII-case-insensitive one.
pub(crate) fn go_field_index(names: &[&str], key: &str) -> Option<usize> {
    names
        .iter()
        .position(|n| *n == key)
        .or_else(|| names.iter().position(|n| n.eq_ignore_ascii_case(key)))
}

/// The member of an object that Go would decode into the field `name`: the last member
/// whose name matches exactly or case-insensitively. `None` when absent or when `node`
/// is `null`.
///
/// # Errors
/// When `node` is neither an object nor `null`.
pub(crate) fn go_member<'a>(
    node: &'a Node,
    name: &str,
    what: &str,
) -> Result<Option<&'a Node>, String> {
    match node {
        Node::Null => Ok(None),
        Node::Object(members) => Ok(members
            .iter()
            .rev()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)),
        other => Err(format!("{what} is {}, not an object", other.kind())),
    }
}

/// The members of a JSON object read as a Go `map[string]T`: in document order, a
/// repeated key keeping its first position but its last value. `null` is an empty map.
///
/// # Errors
/// When `node` is neither an object nor `null`.
pub(crate) fn go_map<'a>(node: &'a Node, what: &str) -> Result<Vec<(&'a str, &'a Node)>, String> {
    match node {
        Node::Null => Ok(Vec::new()),
        Node::Object(members) => {
            let mut out: Vec<(&str, &Node)> = Vec::with_capacity(members.len());
            for (k, v) in members {
                if let Some(slot) = out.iter_mut().find(|(seen, _)| *seen == k.as_str()) {
                    slot.1 = v;
                } else {
                    out.push((k.as_str(), v));
                }
            }
            Ok(out)
        }
        other => Err(format!("{what} is {}, not an object", other.kind())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_keep_document_order_and_go_case_rules() {
        let node = parse_json(br#"{"b":1,"Auth":"x","a":null,"auth":"y","USERNAME":"u"}"#)
            .expect("valid JSON");
        let [auth, user, pass] =
            go_fields(&node, ["auth", "username", "password"], "entry").expect("strings");
        assert_eq!(auth.as_deref(), Some("y"));
        assert_eq!(user.as_deref(), Some("u"));
        assert_eq!(pass, None);
        let err = go_fields(&node, ["b"], "entry").unwrap_err();
        assert_eq!(err, "entry: field `b` is a number, not a string");
    }

    #[test]
    fn json_errors_carry_position_but_not_text() {
        let err = parse_json(b"{\"a\": \"hunter2\" \"b\"}").unwrap_err();
        let msg = json_error_message(&err);
        assert!(msg.starts_with("line 1 column "), "{msg}");
        assert!(!msg.contains("hunter2"), "{msg}");
    }

    #[test]
    fn repeated_map_keys_keep_the_last_value() {
        let node = parse_json(br#"{"a":"1","b":"2","a":"3"}"#).expect("valid JSON");
        let map = go_map(&node, "m").expect("object");
        assert_eq!(
            map,
            vec![
                ("a", &Node::String("3".into())),
                ("b", &Node::String("2".into()))
            ]
        );
    }
}
