//! Request bodies decoded with errors for people: the field's path and the JSON type
//! expected and found (`images[0]: expected an object with "reference", found a
//! string`), never a Rust type; the body must be a JSON object.
//!
//! serde's data errors have fixed shapes (`invalid type: {found}, expected {expected}`,
//! `unknown field`, `missing field`, serde's `de::Error` defaults); `serde_path_to_error`
//! gives the path. What a field expects comes from the caller's table of paths, else from
//! serde's own wording mapped to JSON's type names.

use serde::de::DeserializeOwned;

/// A body that is not the request: what is wrong, where in the request (`images[0]`) and,
/// for malformed JSON, the line and column in the body.
#[derive(Debug)]
pub(crate) struct DecodeError {
    pub message: String,
    /// What is wrong, as data.
    pub kind: DecodeKind,
    /// The field it is about, as its path in the request (`images[0].policy`, with the
    /// caller's prefix: `request.kind`); for an unknown field, that field's path;
    /// `None` for the body itself (not JSON, not an object).
    pub field: Option<String>,
    pub line: Option<usize>,
    pub column: Option<usize>,
}

/// What is wrong with a body ([`DecodeError::kind`]), from serde's fixed shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DecodeKind {
    /// Not JSON, or more after the object.
    NotJson,
    /// JSON, but not an object (or a value that must be one is not).
    NotAnObject,
    /// A field of the wrong JSON type, or a value its type refuses.
    WrongType,
    /// A field the request does not have.
    UnknownField,
    /// A field the request needs is missing.
    MissingField,
    /// A field given twice.
    DuplicateField,
    /// Anything else serde says about a value.
    Invalid,
}

impl DecodeKind {
    /// snake_case, the API error's `kind`: `not_json`, `not_an_object`, `wrong_type`,
    /// `unknown_field`, `missing_field`, `duplicate_field`, `invalid`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            DecodeKind::NotJson => "not_json",
            DecodeKind::NotAnObject => "not_an_object",
            DecodeKind::WrongType => "wrong_type",
            DecodeKind::UnknownField => "unknown_field",
            DecodeKind::MissingField => "missing_field",
            DecodeKind::DuplicateField => "duplicate_field",
            DecodeKind::Invalid => "invalid",
        }
    }
}

impl DecodeError {
    fn new(message: String, kind: DecodeKind, field: Option<String>) -> DecodeError {
        DecodeError {
            message,
            kind,
            field,
            line: None,
            column: None,
        }
    }
}

/// What a field at a path expects, in JSON's words (`a string`, `an object with
/// "reference"`); paths are `serde_path_to_error`'s with indices as `[]`
/// (`images[].policy`). `None`: serde's own wording, mapped.
pub(crate) type Expected = fn(&str) -> Option<&'static str>;

/// Decodes `body`, which must be one JSON object, as `T`.
///
/// # Errors
/// Not JSON (with its position), not an object (naming what it is), or a field of the
/// wrong type, unknown or missing (naming its path and the JSON type expected).
pub(crate) fn object<T: DeserializeOwned>(
    body: &[u8],
    expected: Expected,
) -> Result<T, DecodeError> {
    if let Some(found) = not_an_object(body) {
        return Err(DecodeError::new(
            format!("the request must be a JSON object, found {found}"),
            DecodeKind::NotAnObject,
            None,
        ));
    }
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| describe(e, "", expected))?;
    de.end().map_err(|e| not_json(&e))?;
    Ok(value)
}

/// Decodes a JSON value (already read) as `T`; paths in messages start with `prefix`
/// (`request.`).
///
/// # Errors
/// As [`object`], without positions.
pub(crate) fn value<T: DeserializeOwned>(
    value: &serde_json::Value,
    prefix: &str,
    expected: Expected,
) -> Result<T, DecodeError> {
    if let Some(found) = (!value.is_object()).then(|| json_type(value)) {
        let at = prefix.trim_end_matches('.');
        return Err(DecodeError::new(
            format!("{at}: expected an object, found {found}"),
            DecodeKind::NotAnObject,
            (!at.is_empty()).then(|| at.to_owned()),
        ));
    }
    serde_path_to_error::deserialize(value).map_err(|e| describe(e, prefix, expected))
}

/// serde_json's message without its ` at line L column C`, and that position.
fn message_of(e: &serde_json::Error) -> (String, Option<usize>, Option<usize>) {
    let (line, column) = (e.line(), e.column());
    let text = e.to_string();
    let text = text
        .strip_suffix(&format!(" at line {line} column {column}"))
        .unwrap_or(&text)
        .to_owned();
    (
        text,
        (line > 0).then_some(line),
        (column > 0).then_some(column),
    )
}

/// A body that is not JSON (or has more after the object), with the position.
fn not_json(e: &serde_json::Error) -> DecodeError {
    let (text, line, column) = message_of(e);
    DecodeError {
        message: format!("the body is not JSON: {text}"),
        kind: DecodeKind::NotJson,
        field: None,
        line,
        column,
    }
}

/// `an array`, `a string`, ... when the body's first character shows it is not a JSON
/// object; `None` for `{` and for what is not JSON at all (the parser says where).
fn not_an_object(body: &[u8]) -> Option<&'static str> {
    let first = body
        .iter()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))?;
    match first {
        b'[' => Some("an array"),
        b'"' => Some("a string"),
        b'-' | b'0'..=b'9' => Some("a number"),
        b't' | b'f' => Some("a boolean"),
        b'n' => Some("null"),
        _ => None,
    }
}

/// `null`, `a boolean`, `a number`, `a string`, `an array`, `an object`: a JSON
/// value's type in words.
pub(crate) fn json_type(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// `images[3].policy` → `images[].policy`.
fn shape(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut in_index = false;
    for c in path.chars() {
        match c {
            '[' => {
                in_index = true;
                out.push_str("[]");
            }
            ']' => in_index = false,
            _ if in_index => {}
            c => out.push(c),
        }
    }
    out
}

fn describe(
    e: serde_path_to_error::Error<serde_json::Error>,
    prefix: &str,
    expected: Expected,
) -> DecodeError {
    let path = e.path().to_string();
    let path = if path == "." { String::new() } else { path };
    let inner = e.into_inner();
    if !matches!(inner.classify(), serde_json::error::Category::Data) {
        return not_json(&inner);
    }
    let (text, line, column) = message_of(&inner);
    // `request.` alone is `request`, not `request.: missing field "kind"`.
    let full = if path.is_empty() {
        prefix.trim_end_matches('.').to_owned()
    } else {
        format!("{prefix}{path}")
    };
    let at = |p: &str| {
        if p.is_empty() {
            String::new()
        } else {
            format!("{p}: ")
        }
    };
    let mismatch = text
        .strip_prefix("invalid type: ")
        .or_else(|| text.strip_prefix("invalid value: "));
    let field_of = |p: &str| (!p.is_empty()).then(|| p.to_owned());
    let (message, kind, field) = if let Some(rest) = mismatch {
        let (found, serde_expected) = rest.split_once(", expected ").unwrap_or((rest, ""));
        let wanted = expected(&shape(&path))
            .map(str::to_owned)
            .unwrap_or_else(|| json_expected(serde_expected));
        (
            format!(
                "{}expected {wanted}, found {}",
                at(&full),
                json_found(found)
            ),
            DecodeKind::WrongType,
            field_of(&full),
        )
    } else if let Some(rest) = text.strip_prefix("unknown field ") {
        // `unknown field `x`, expected one of `a`, `b``: the path ends in the field.
        // `unknown field `x`, expected `a` or `b`` (or `one of `a`, `b``); the path may
        // end in the field itself.
        let (field, known) = rest.split_once(", expected ").unwrap_or((rest, ""));
        let field = field.trim_matches('`');
        let parent = if full == field {
            ""
        } else {
            full.strip_suffix(&format!(".{field}")).unwrap_or(&full)
        };
        let known = known
            .trim_start_matches("one of ")
            .replace(" or ", ", ")
            .replace('`', "\"");
        let known = if known.is_empty() {
            String::new()
        } else {
            format!("; known fields: {known}")
        };
        let path = if parent.is_empty() {
            field.to_owned()
        } else {
            format!("{parent}.{field}")
        };
        (
            format!("{}unknown field \"{field}\"{known}", at(parent)),
            DecodeKind::UnknownField,
            Some(path),
        )
    } else if let Some((field, what, kind)) = [
        ("missing field ", "missing", DecodeKind::MissingField),
        ("duplicate field ", "duplicate", DecodeKind::DuplicateField),
    ]
    .into_iter()
    .find_map(|(prefix, what, kind)| text.strip_prefix(prefix).map(|f| (f, what, kind)))
    {
        // The path is the object's; the field is in it.
        let field = field.trim_matches('`');
        let path = if full.is_empty() {
            field.to_owned()
        } else {
            format!("{full}.{field}")
        };
        (
            format!("{}{what} field \"{field}\"", at(&full)),
            kind,
            Some(path),
        )
    } else {
        (
            format!("{}{text}", at(&full)),
            DecodeKind::Invalid,
            field_of(&full),
        )
    };
    DecodeError {
        message,
        kind,
        field,
        line,
        column,
    }
}

/// serde's `Unexpected` (`string "x"`, `integer `5``, `map`) in JSON's words.
fn json_found(found: &str) -> String {
    let kind = found.split(' ').next().unwrap_or(found);
    let name = match kind {
        "string" => "a string",
        "integer" | "floating" => "a number",
        "boolean" => "a boolean",
        "map" => "an object",
        "sequence" => "an array",
        "unit" | "null" => "null",
        _ => return found.to_owned(),
    };
    // Keep a short value for people (`found the number 5`), not a long string.
    match found.split_once(' ') {
        Some((_, shown)) if kind != "string" && shown.len() <= 32 && kind != "unit" => {
            format!("{name} {}", shown.replace('`', ""))
        }
        _ => name.to_owned(),
    }
}

/// serde's `expected` (`f64`, `a sequence`, `struct X`) in JSON's words.
fn json_expected(expected: &str) -> String {
    match expected {
        "f32" | "f64" => "a number".to_owned(),
        "u8" | "u16" | "u32" | "u64" | "usize" | "i8" | "i16" | "i32" | "i64" | "isize" => {
            "a whole number".to_owned()
        }
        "a boolean" => "true or false".to_owned(),
        "a sequence" => "an array".to_owned(),
        "a map" => "an object".to_owned(),
        e if e.starts_with("struct ") => "an object".to_owned(),
        "" => "another type".to_owned(),
        e => e.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Inner {
        reference: String,
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Outer {
        count: Option<f64>,
        flag: Option<bool>,
        list: Option<Vec<Inner>>,
        map: Option<serde_json::Map<String, serde_json::Value>>,
    }

    fn table(path: &str) -> Option<&'static str> {
        (path == "list[]").then_some("an object with \"reference\"")
    }

    fn error(body: &str) -> String {
        object::<Outer>(body.as_bytes(), table)
            .expect_err("an error")
            .message
    }

    #[test]
    fn messages_name_paths_and_json_types() {
        for (body, message) in [
            (
                r#"{"count": "x"}"#,
                "count: expected a number, found a string",
            ),
            (
                r#"{"flag": 1}"#,
                "flag: expected true or false, found a number 1",
            ),
            (
                r#"{"list": {}}"#,
                "list: expected an array, found an object",
            ),
            (
                r#"{"list": [{"reference": "a"}, "b"]}"#,
                "list[1]: expected an object with \"reference\", found a string",
            ),
            (r#"{"list": [{}]}"#, "list[0]: missing field \"reference\""),
            (r#"{"map": []}"#, "map: expected an object, found an array"),
        ] {
            assert_eq!(error(body), message, "{body}");
        }
        let unknown = error(r#"{"cuont": 1}"#);
        assert!(
            unknown.starts_with("unknown field \"cuont\"; known fields: \"count\""),
            "{unknown}"
        );
        for (body, found) in [
            ("[1]", "an array"),
            (" \"x\"", "a string"),
            ("5", "a number"),
            ("null", "null"),
            ("true", "a boolean"),
        ] {
            assert_eq!(
                error(body),
                format!("the request must be a JSON object, found {found}")
            );
        }
        let syntax = object::<Outer>(b"{\n\"count\": }", table).expect_err("syntax");
        assert!(
            syntax.message.starts_with("the body is not JSON"),
            "{syntax:?}"
        );
        assert_eq!(syntax.line, Some(2));
        for body in [
            r#"{"count": "x"}"#,
            r#"{"list": [1]}"#,
            r#"{"flag": "x"}"#,
            r#"{"map": 1}"#,
        ] {
            let m = error(body);
            assert!(
                !m.contains("struct") && !m.contains("f64") && !m.contains("sequence"),
                "{m}"
            );
        }
    }

    #[test]
    fn values_get_the_prefix() {
        let v = serde_json::json!({"list": [{"reference": 5}]});
        let e = value::<Outer>(&v, "request.", table).expect_err("error");
        assert_eq!(
            e.message,
            "request.list[0].reference: expected a string, found a number 5"
        );
        let e = value::<Outer>(&serde_json::json!([]), "request.", table).expect_err("error");
        assert_eq!(e.message, "request: expected an object, found an array");
    }
}

#[cfg(test)]
mod facts {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Item {
        reference: String,
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Body {
        flag: Option<bool>,
        list: Option<Vec<Item>>,
    }

    /// Each error's kind and field (a path; the unknown or missing field's own), as
    /// the API's 400 carries them; a prefix alone has no stray dot (rev23q 10, 17).
    #[test]
    fn errors_carry_their_kind_and_field() {
        let none = |_: &str| None;
        let cases: [(&str, DecodeKind, Option<&str>); 6] = [
            ("[1]", DecodeKind::NotAnObject, None),
            ("{", DecodeKind::NotJson, None),
            (r#"{"flag": 1}"#, DecodeKind::WrongType, Some("flag")),
            (r#"{"lsit": []}"#, DecodeKind::UnknownField, Some("lsit")),
            (
                r#"{"list": [{}]}"#,
                DecodeKind::MissingField,
                Some("list[0].reference"),
            ),
            (
                r#"{"flag": true, "flag": true}"#,
                DecodeKind::DuplicateField,
                Some("flag"),
            ),
        ];
        for (body, kind, field) in cases {
            let e = object::<Body>(body.as_bytes(), none).expect_err(body);
            assert_eq!(
                (e.kind, e.field.as_deref()),
                (kind, field),
                "{body}: {}",
                e.message
            );
        }
        let e = value::<Item>(&serde_json::json!({}), "request.", none).expect_err("missing");
        assert_eq!(e.message, "request: missing field \"reference\"");
        assert_eq!(e.field.as_deref(), Some("request.reference"));
    }
}
