//! Go's encoding/json decoding a compiled build into go-vela/server v0.28.8's
//! `pipeline.Build` (`compiler/types/pipeline/*.go`, `compiler/types/raw/map.go`), as the
//! worker does with the build it is handed: [`load`] gives the build as that decoder
//! leaves it, as a tree the pipeline reader walks, or the error `json.Unmarshal` returns.
//!
//! What encoding/json does, and so what is modelled (checked with Go 1.19's
//! encoding/json and the struct shapes and tags of `pipeline.Build`, probes kept out of
//! this tree):
//! - The whole text is scanned first: a text that is not JSON (RFC 8259, as Go's scanner
//!   reads it: no comments, no trailing commas, no unquoted keys, no byte order mark) is
//!   a `SyntaxError` ("invalid character 'a' looking for beginning of object key
//!   string", "unexpected end of JSON input"), whatever else is wrong. Go gives a byte
//!   offset; here it is the line and column of that byte ([`GoJsonError::Syntax`]).
//! - An object key fills the struct field whose JSON name it is, else one whose name it
//!   equals without regard to case (Unicode simple folding: `"Image"`, `"IMAGE"`,
//!   `"ſteps"` fill `image` and `steps`); other keys are dropped unread. A key written
//!   twice (or in two cases) is decoded twice, into the same field: the last wins, and
//!   a struct, a pointer to one, a map or a slice's elements are decoded *into*, so that
//!   `"steps":[{"name":"a","image":"x"}],"steps":[{"name":"b"}]` is one step `b` with
//!   image `x` (slices reuse their elements up to the longest earlier length; an empty
//!   array or `null` starts afresh).
//! - A value of the wrong JSON type for its field is an `UnmarshalTypeError`; decoding
//!   goes on, and the first in the text is returned ([`GoJsonError::Type`]); `null`
//!   decodes into anything (and sets a slice, map or pointer to nil).
//! - `raw.StringSliceMap` (the build's own `environment`) has its own `UnmarshalJSON`: a
//!   string, a list of `NAME=value` strings, or an object of strings; anything else,
//!   `null` included (its `StringSlice` reads `null` as `[""]`, which has no `=`), is
//!   "unable to unmarshal into StringSliceMap", which stops the decoding at once
//!   ([`GoJsonError::Decode`]).

use crate::yaml::{Document, MAX_DEPTH, MAX_NODES, Node, NodeId, Pos, Stream, Value};

/// Why `json.Unmarshal` of a text into `pipeline.Build` fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum GoJsonError {
    /// Not JSON: the scanner's message and where the offending byte is (the end of the
    /// text for "unexpected end of JSON input").
    Syntax { message: String, pos: Pos },
    /// The first value of the wrong type: its path (`steps[0].pull`, with the fields' JSON
    /// names), the Go type it does not decode into, and encoding/json's word for the
    /// value (`string`, `number`, `number 1.5`, `bool`, `array`, `object`).
    Type {
        field: String,
        expected: &'static str,
        found: String,
        pos: Pos,
    },
    /// A Vela type's own `UnmarshalJSON` failed (only `raw.StringSliceMap` can).
    Decode { field: String, pos: Pos },
    /// Beyond pullcheck's own limits ([`MAX_DEPTH`], [`MAX_NODES`]).
    Limit { message: String, pos: Pos },
}

/// A Go type of `pipeline.Build`, as encoding/json treats it.
enum Ty {
    /// `string`.
    Str,
    /// `bool`.
    Bool,
    /// A signed integer: its Go name and range.
    Int(&'static str, i64, i64),
    /// A slice of strings: its Go name (`[]string`, `pipeline.Ruletype`).
    Strings(&'static str),
    /// `map[string]string`.
    StrMap,
    /// A struct held by value.
    Struct(&'static Struct),
    /// A pointer to a struct.
    Ptr(&'static Struct),
    /// A slice of pointers to a struct: the slice's Go name.
    Slice(&'static Struct, &'static str),
    /// `raw.StringSliceMap`.
    StringSliceMap,
    /// `pipeline.ParameterMap` (`map[string]*Parameter`).
    ParameterMap,
}

/// A Go struct: its name with package, and its fields' JSON names and types.
struct Struct {
    go: &'static str,
    fields: &'static [(&'static str, Ty)],
}

impl Struct {
    /// The name as `UnmarshalTypeError` prints the struct of a field (`reflect.Type.Name`).
    fn name(&self) -> &'static str {
        self.go.rsplit('.').next().unwrap_or(self.go)
    }

    /// The field a key fills: the exact name, else the first whose name folds equal.
    fn field(&self, key: &str) -> Option<&'static (&'static str, Ty)> {
        let fields: &'static [(&'static str, Ty)] = self.fields;
        fields
            .iter()
            .find(|(name, _)| *name == key)
            .or_else(|| fields.iter().find(|(name, _)| folds_equal(name, key)))
    }
}

const I32: Ty = Ty::Int("int32", i32::MIN as i64, i32::MAX as i64);
const I64: Ty = Ty::Int("int64", i64::MIN, i64::MAX);

static RULES: Struct = Struct {
    go: "pipeline.Rules",
    fields: &[
        ("branch", Ty::Strings("pipeline.Ruletype")),
        ("comment", Ty::Strings("pipeline.Ruletype")),
        ("event", Ty::Strings("pipeline.Ruletype")),
        ("path", Ty::Strings("pipeline.Ruletype")),
        ("repo", Ty::Strings("pipeline.Ruletype")),
        ("sender", Ty::Strings("pipeline.Ruletype")),
        ("status", Ty::Strings("pipeline.Ruletype")),
        ("tag", Ty::Strings("pipeline.Ruletype")),
        ("target", Ty::Strings("pipeline.Ruletype")),
        ("label", Ty::Strings("pipeline.Ruletype")),
        ("instance", Ty::Strings("pipeline.Ruletype")),
        ("eval", Ty::Str),
        ("operator", Ty::Str),
        ("matcher", Ty::Str),
    ],
};
static RULESET: Struct = Struct {
    go: "pipeline.Ruleset",
    fields: &[
        ("if", Ty::Struct(&RULES)),
        ("unless", Ty::Struct(&RULES)),
        ("matcher", Ty::Str),
        ("operator", Ty::Str),
        ("continue", Ty::Bool),
    ],
};
static STEP_SECRET: Struct = Struct {
    go: "pipeline.StepSecret",
    fields: &[("source", Ty::Str), ("target", Ty::Str)],
};
static ARTIFACTS: Struct = Struct {
    go: "pipeline.Artifacts",
    fields: &[("paths", Ty::Strings("[]string"))],
};
static ULIMIT: Struct = Struct {
    go: "pipeline.Ulimit",
    fields: &[("name", Ty::Str), ("soft", I64), ("hard", I64)],
};
static VOLUME: Struct = Struct {
    go: "pipeline.Volume",
    fields: &[
        ("source", Ty::Str),
        ("destination", Ty::Str),
        ("access_mode", Ty::Str),
    ],
};
static TOKEN: Struct = Struct {
    go: "pipeline.Token",
    fields: &[
        ("repositories", Ty::Strings("[]string")),
        ("permissions", Ty::StrMap),
    ],
};
static GIT: Struct = Struct {
    go: "pipeline.Git",
    fields: &[("token", Ty::Struct(&TOKEN))],
};
/// `container.go` lines 34–59.
static CONTAINER: Struct = Struct {
    go: "pipeline.Container",
    fields: &[
        ("id", Ty::Str),
        ("commands", Ty::Strings("[]string")),
        ("detach", Ty::Bool),
        ("directory", Ty::Str),
        ("entrypoint", Ty::Strings("[]string")),
        ("environment", Ty::StrMap),
        ("exit_code", I32),
        ("image", Ty::Str),
        ("name", Ty::Str),
        ("needs", Ty::Strings("[]string")),
        ("networks", Ty::Strings("[]string")),
        ("number", I32),
        ("ports", Ty::Strings("[]string")),
        ("privileged", Ty::Bool),
        ("pull", Ty::Str),
        ("ruleset", Ty::Struct(&RULESET)),
        (
            "secrets",
            Ty::Slice(&STEP_SECRET, "pipeline.StepSecretSlice"),
        ),
        ("artifacts", Ty::Struct(&ARTIFACTS)),
        ("ulimits", Ty::Slice(&ULIMIT, "pipeline.UlimitSlice")),
        ("volumes", Ty::Slice(&VOLUME, "pipeline.VolumeSlice")),
        ("user", Ty::Str),
        ("report_as", Ty::Str),
        ("id_request", Ty::Str),
        ("git", Ty::Ptr(&GIT)),
    ],
};
/// `stage.go` (`Done` is `json:"-"`).
static STAGE: Struct = Struct {
    go: "pipeline.Stage",
    fields: &[
        ("environment", Ty::StrMap),
        ("name", Ty::Str),
        ("needs", Ty::Strings("[]string")),
        ("independent", Ty::Bool),
        ("steps", Ty::Slice(&CONTAINER, "pipeline.ContainerSlice")),
    ],
};
static SECRET: Struct = Struct {
    go: "pipeline.Secret",
    fields: &[
        ("name", Ty::Str),
        ("value", Ty::Str),
        ("key", Ty::Str),
        ("engine", Ty::Str),
        ("type", Ty::Str),
        ("origin", Ty::Ptr(&CONTAINER)),
        ("pull", Ty::Str),
    ],
};
static CANCEL: Struct = Struct {
    go: "pipeline.CancelOptions",
    fields: &[
        ("running", Ty::Bool),
        ("pending", Ty::Bool),
        ("default_branch", Ty::Bool),
    ],
};
static METADATA: Struct = Struct {
    go: "pipeline.Metadata",
    fields: &[
        ("template", Ty::Bool),
        ("clone", Ty::Bool),
        ("environment", Ty::Strings("[]string")),
        ("auto_cancel", Ty::Ptr(&CANCEL)),
    ],
};
static WORKER: Struct = Struct {
    go: "pipeline.Worker",
    fields: &[("flavor", Ty::Str), ("platform", Ty::Str)],
};
static PARAMETER: Struct = Struct {
    go: "pipeline.Parameter",
    fields: &[
        ("description", Ty::Str),
        ("type", Ty::Str),
        ("required", Ty::Bool),
        ("options", Ty::Strings("[]string")),
        ("min", I64_INT),
        ("max", I64_INT),
    ],
};
/// Go's `int` on the 64-bit platforms Vela runs on.
const I64_INT: Ty = Ty::Int("int", i64::MIN, i64::MAX);
static DEPLOYMENT: Struct = Struct {
    go: "pipeline.Deployment",
    fields: &[
        ("targets", Ty::Strings("[]string")),
        ("parameters", Ty::ParameterMap),
    ],
};
/// `build.go` lines 17–31.
static BUILD: Struct = Struct {
    go: "pipeline.Build",
    fields: &[
        ("id", Ty::Str),
        ("token", Ty::Str),
        ("token_exp", I64),
        ("version", Ty::Str),
        ("metadata", Ty::Struct(&METADATA)),
        ("git", Ty::Ptr(&GIT)),
        ("environment", Ty::StringSliceMap),
        ("worker", Ty::Struct(&WORKER)),
        ("deployment", Ty::Struct(&DEPLOYMENT)),
        ("secrets", Ty::Slice(&SECRET, "pipeline.SecretSlice")),
        ("services", Ty::Slice(&CONTAINER, "pipeline.ContainerSlice")),
        ("stages", Ty::Slice(&STAGE, "pipeline.StageSlice")),
        ("steps", Ty::Slice(&CONTAINER, "pipeline.ContainerSlice")),
    ],
};

/// Whether a field's (ASCII) JSON name and a key are equal under Unicode simple case
/// folding, as encoding/json matches keys (`bytes.EqualFold` in its field lookup): ASCII
/// letters in either case, and the two non-ASCII letters whose fold orbits hold ASCII ones,
/// `ſ` (U+017F, with `s`) and the Kelvin sign (U+212A, with `k`). `name` must be ASCII
/// (Go struct tags of `pipeline.Build` are); no error case.
pub fn folds_equal(name: &str, key: &str) -> bool {
    let mut key = key.chars();
    for n in name.chars() {
        let Some(k) = key.next() else {
            return false;
        };
        let k = match k {
            '\u{17f}' => 's',
            '\u{212a}' => 'k',
            k => k.to_ascii_lowercase(),
        };
        if k != n.to_ascii_lowercase() {
            return false;
        }
    }
    key.next().is_none()
}

/// The Go field an `UnmarshalTypeError` at `field` (a path of [`GoJsonError::Type`])
/// names, as encoding/json words it: the innermost struct's name, then the JSON names of
/// the fields from the top, without list indices or map keys (`steps[0].pull` is
/// `Container.steps.pull`, `steps[0].environment.N` `Container.steps.environment`,
/// `steps[0].ruleset.if.branch` `Rules.steps.ruleset.if.branch`, `token_exp`
/// `Build.token_exp`).
pub(crate) fn go_field(field: &str) -> String {
    let mut s: &Struct = &BUILD;
    let mut stack: Vec<&str> = Vec::new();
    let mut owner = BUILD.name();
    let mut segments = field.split('.').peekable();
    while let Some(segment) = segments.next() {
        let key = segment.split('[').next().unwrap_or(segment);
        let Some((name, ty)) = s.field(key) else {
            break;
        };
        stack.push(name);
        owner = s.name();
        match ty {
            Ty::Struct(next) | Ty::Ptr(next) | Ty::Slice(next, _) => s = next,
            Ty::ParameterMap => {
                // `parameters.<key>.<field>`: the key may hold dots, the field is last.
                let rest: Vec<&str> = segments.by_ref().collect();
                if rest.len() >= 2
                    && let Some((name, _)) = PARAMETER.field(rest[rest.len() - 1])
                {
                    stack.push(name);
                    owner = PARAMETER.name();
                }
                break;
            }
            _ => break,
        }
    }
    format!("{owner}.{}", stack.join("."))
}

/// A parsed JSON value and the byte offset where it starts.
struct J {
    at: usize,
    kind: Jk,
}

enum Jk {
    Null,
    Bool(bool),
    /// A number as written.
    Num(String),
    Str(String),
    Arr(Vec<J>),
    /// The entries as written, repeated keys included.
    Obj(Vec<(String, J)>),
}

impl J {
    /// encoding/json's word for the value in an `UnmarshalTypeError`.
    fn word(&self) -> &'static str {
        match self.kind {
            Jk::Null => "null",
            Jk::Bool(_) => "bool",
            Jk::Num(_) => "number",
            Jk::Str(_) => "string",
            Jk::Arr(_) => "array",
            Jk::Obj(_) => "object",
        }
    }
}

/// A syntax error at a byte offset (the text's length for its end).
struct SyntaxAt {
    message: String,
    at: usize,
    limit: bool,
}

/// A recursive-descent parser that refuses what Go's scanner (`scanner.go`) refuses, with
/// its words.
struct Parser<'t> {
    text: &'t [u8],
    i: usize,
    nodes: usize,
}

/// A byte as Go's `quoteChar` shows it: `'\''`, `'"'`, else `strconv.Quote` of the byte
/// read as a rune (U+0000 to U+00FF) between single quotes.
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => r"'\''".to_owned(),
        b'"' => "'\"'".to_owned(),
        _ => {
            let inner = match c {
                0x07 => r"\a".to_owned(),
                0x08 => r"\b".to_owned(),
                0x0c => r"\f".to_owned(),
                b'\n' => r"\n".to_owned(),
                b'\r' => r"\r".to_owned(),
                b'\t' => r"\t".to_owned(),
                0x0b => r"\v".to_owned(),
                b'\\' => r"\\".to_owned(),
                0x00..=0x1f | 0x7f => format!(r"\x{c:02x}"),
                // C1 controls, NO-BREAK SPACE and SOFT HYPHEN are not printable for Go.
                0x80..=0xa0 | 0xad => format!(r"\u{c:04x}"),
                _ => char::from(c).to_string(),
            };
            format!("'{inner}'")
        }
    }
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.i).copied()
    }

    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.i += 1;
        }
    }

    /// "invalid character ... <context>" at the current byte, or the end of input.
    fn invalid(&self, context: &str) -> SyntaxAt {
        match self.peek() {
            Some(c) => SyntaxAt {
                message: format!("invalid character {} {context}", quote_char(c)),
                at: self.i,
                limit: false,
            },
            None => self.eof(),
        }
    }

    fn eof(&self) -> SyntaxAt {
        SyntaxAt {
            message: "unexpected end of JSON input".to_owned(),
            at: self.text.len(),
            limit: false,
        }
    }

    fn count(&mut self) -> Result<(), SyntaxAt> {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return Err(SyntaxAt {
                message: format!("too large: more than {MAX_NODES} JSON values"),
                at: self.i,
                limit: true,
            });
        }
        Ok(())
    }

    fn document(&mut self) -> Result<J, SyntaxAt> {
        self.skip_space();
        let value = self.value(0)?;
        self.skip_space();
        if self.peek().is_some() {
            return Err(self.invalid("after top-level value"));
        }
        Ok(value)
    }

    fn value(&mut self, depth: usize) -> Result<J, SyntaxAt> {
        self.count()?;
        let at = self.i;
        let kind = match self.peek() {
            None => return Err(self.eof()),
            Some(b'{') => {
                self.nest(depth)?;
                self.object(depth + 1)?
            }
            Some(b'[') => {
                self.nest(depth)?;
                self.array(depth + 1)?
            }
            Some(b'"') => Jk::Str(self.string()?),
            Some(b'-' | b'0'..=b'9') => Jk::Num(self.number()?),
            Some(b't') => {
                self.literal("true")?;
                Jk::Bool(true)
            }
            Some(b'f') => {
                self.literal("false")?;
                Jk::Bool(false)
            }
            Some(b'n') => {
                self.literal("null")?;
                Jk::Null
            }
            Some(_) => return Err(self.invalid("looking for beginning of value")),
        };
        Ok(J { at, kind })
    }

    fn nest(&self, depth: usize) -> Result<(), SyntaxAt> {
        if depth >= MAX_DEPTH {
            return Err(SyntaxAt {
                message: format!("too deep: more than {MAX_DEPTH} nested arrays and objects"),
                at: self.i,
                limit: true,
            });
        }
        Ok(())
    }

    fn object(&mut self, depth: usize) -> Result<Jk, SyntaxAt> {
        self.i += 1;
        self.skip_space();
        let mut entries = Vec::new();
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Ok(Jk::Obj(entries));
        }
        loop {
            if self.peek() != Some(b'"') {
                return Err(self.invalid("looking for beginning of object key string"));
            }
            let key = self.string()?;
            self.skip_space();
            if self.peek() != Some(b':') {
                return Err(self.invalid("after object key"));
            }
            self.i += 1;
            self.skip_space();
            let value = self.value(depth)?;
            entries.push((key, value));
            self.skip_space();
            match self.peek() {
                Some(b',') => {
                    self.i += 1;
                    self.skip_space();
                }
                Some(b'}') => {
                    self.i += 1;
                    return Ok(Jk::Obj(entries));
                }
                _ => return Err(self.invalid("after object key:value pair")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Jk, SyntaxAt> {
        self.i += 1;
        self.skip_space();
        let mut items = Vec::new();
        if self.peek() == Some(b']') {
            self.i += 1;
            return Ok(Jk::Arr(items));
        }
        loop {
            items.push(self.value(depth)?);
            self.skip_space();
            match self.peek() {
                Some(b',') => {
                    self.i += 1;
                    self.skip_space();
                }
                Some(b']') => {
                    self.i += 1;
                    return Ok(Jk::Arr(items));
                }
                _ => return Err(self.invalid("after array element")),
            }
        }
    }

    fn literal(&mut self, word: &'static str) -> Result<(), SyntaxAt> {
        self.i += 1;
        for expected in word.bytes().skip(1) {
            if self.peek() != Some(expected) {
                return Err(self.invalid(&format!(
                    "in literal {word} (expecting {})",
                    quote_char(expected)
                )));
            }
            self.i += 1;
        }
        Ok(())
    }

    fn digits(&mut self) {
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
    }

    fn number(&mut self) -> Result<String, SyntaxAt> {
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek() {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(self.invalid("in numeric literal")),
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.invalid("after decimal point in numeric literal"));
            }
            self.digits();
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.invalid("in exponent of numeric literal"));
            }
            self.digits();
        }
        Ok(String::from_utf8_lossy(&self.text[start..self.i]).into_owned())
    }

    /// Four hex digits after `\u`, or the scanner's error.
    fn hex4(&mut self) -> Result<u32, SyntaxAt> {
        let mut v = 0;
        for _ in 0..4 {
            let d = match self.peek() {
                Some(c @ b'0'..=b'9') => c - b'0',
                Some(c @ b'a'..=b'f') => c - b'a' + 10,
                Some(c @ b'A'..=b'F') => c - b'A' + 10,
                _ => return Err(self.invalid("in \\u hexadecimal character escape")),
            };
            v = v * 16 + u32::from(d);
            self.i += 1;
        }
        Ok(v)
    }

    /// A string, decoded as encoding/json's `unquote` does: a surrogate pair of `\u`
    /// escapes is one character, a lone surrogate U+FFFD.
    fn string(&mut self) -> Result<String, SyntaxAt> {
        self.i += 1;
        let mut out: Vec<u8> = Vec::new();
        let mut pending_high: Option<u32> = None;
        let flush = |out: &mut Vec<u8>, high: &mut Option<u32>| {
            if high.take().is_some() {
                out.extend_from_slice("\u{fffd}".as_bytes());
            }
        };
        loop {
            match self.peek() {
                None => return Err(self.eof()),
                Some(b'"') => {
                    self.i += 1;
                    flush(&mut out, &mut pending_high);
                    return Ok(String::from_utf8_lossy(&out).into_owned());
                }
                Some(b'\\') => {
                    self.i += 1;
                    let c = self.peek();
                    let simple = match c {
                        Some(b'"') => Some(b'"'),
                        Some(b'\\') => Some(b'\\'),
                        Some(b'/') => Some(b'/'),
                        Some(b'b') => Some(0x08),
                        Some(b'f') => Some(0x0c),
                        Some(b'n') => Some(b'\n'),
                        Some(b'r') => Some(b'\r'),
                        Some(b't') => Some(b'\t'),
                        Some(b'u') => None,
                        _ => return Err(self.invalid("in string escape code")),
                    };
                    self.i += 1;
                    if let Some(b) = simple {
                        flush(&mut out, &mut pending_high);
                        out.push(b);
                        continue;
                    }
                    let u = self.hex4()?;
                    match (pending_high.take(), u) {
                        (Some(high), 0xdc00..=0xdfff) => {
                            let c = 0x10000 + ((high - 0xd800) << 10) + (u - 0xdc00);
                            let c = char::from_u32(c).unwrap_or('\u{fffd}');
                            out.extend_from_slice(c.to_string().as_bytes());
                        }
                        (high, _) => {
                            if high.is_some() {
                                out.extend_from_slice("\u{fffd}".as_bytes());
                            }
                            if (0xd800..0xdc00).contains(&u) {
                                pending_high = Some(u);
                            } else {
                                let c = char::from_u32(u).unwrap_or('\u{fffd}');
                                out.extend_from_slice(c.to_string().as_bytes());
                            }
                        }
                    }
                }
                Some(c) if c < 0x20 => return Err(self.invalid("in string literal")),
                Some(c) => {
                    flush(&mut out, &mut pending_high);
                    out.push(c);
                    self.i += 1;
                }
            }
        }
    }
}

/// A Go value as the decoder leaves it.
enum Go {
    /// The zero value, or nil.
    Zero,
    /// A string (quoted), a bool or a number (plain), and where it was read.
    Scalar {
        text: String,
        plain: bool,
        at: usize,
    },
    /// A slice: the elements of its backing array that were ever decoded, of which the
    /// first `len` are the slice.
    List {
        items: Vec<Go>,
        len: usize,
        at: usize,
    },
    /// A struct (its fields by JSON name) or a map, in the order keys were first set.
    Map {
        entries: Vec<(String, Go)>,
        at: usize,
    },
}

impl Go {
    fn entry(&mut self, key: &str, at: usize) -> &mut Go {
        if !matches!(self, Go::Map { .. }) {
            *self = Go::Map {
                entries: Vec::new(),
                at,
            };
        }
        let Go::Map { entries, .. } = self else {
            unreachable!("made a map above")
        };
        let i = match entries.iter().position(|(k, _)| k == key) {
            Some(i) => i,
            None => {
                entries.push((key.to_owned(), Go::Zero));
                entries.len() - 1
            }
        };
        &mut entries[i].1
    }
}

/// What stops the decoding at once.
struct Stop(GoJsonError);

struct Decoder<'t> {
    positions: &'t Positions,
    first: Option<GoJsonError>,
}

/// The byte offsets where lines start, for line and column.
struct Positions {
    text: String,
    lines: Vec<usize>,
}

impl Positions {
    fn new(text: &str) -> Positions {
        let mut lines = vec![0];
        lines.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Positions {
            text: text.to_owned(),
            lines,
        }
    }

    /// The line and column (in characters, from 1) of byte `at`.
    fn pos(&self, at: usize) -> Pos {
        let line = self.lines.partition_point(|&s| s <= at).max(1);
        let start = self.lines[line - 1];
        let at = at.min(self.text.len());
        let column = self
            .text
            .get(start..at)
            .map_or(at - start, |s| s.chars().count())
            + 1;
        Pos { line, column }
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

impl Decoder<'_> {
    fn type_error(&mut self, j: &J, expected: &'static str, found: String, path: &str) {
        if self.first.is_none() {
            self.first = Some(GoJsonError::Type {
                field: path.to_owned(),
                expected,
                found,
                pos: self.positions.pos(j.at),
            });
        }
    }

    fn mismatch(&mut self, j: &J, expected: &'static str, path: &str) {
        self.type_error(j, expected, j.word().to_owned(), path);
    }

    /// Decodes `j` into `into`, a `ty`.
    fn decode(&mut self, j: &J, ty: &Ty, into: &mut Go, path: &str) -> Result<(), Stop> {
        if let Jk::Null = j.kind {
            match ty {
                // No effect on a value that is neither a slice, a map nor a pointer.
                Ty::Str | Ty::Bool | Ty::Int(..) | Ty::Struct(_) => {}
                Ty::StringSliceMap => {
                    return Err(Stop(GoJsonError::Decode {
                        field: path.to_owned(),
                        pos: self.positions.pos(j.at),
                    }));
                }
                _ => *into = Go::Zero,
            }
            return Ok(());
        }
        match ty {
            Ty::Str => match &j.kind {
                Jk::Str(s) => {
                    *into = Go::Scalar {
                        text: s.clone(),
                        plain: false,
                        at: j.at,
                    }
                }
                _ => self.mismatch(j, "string", path),
            },
            Ty::Bool => match &j.kind {
                Jk::Bool(b) => {
                    *into = Go::Scalar {
                        text: b.to_string(),
                        plain: true,
                        at: j.at,
                    }
                }
                _ => self.mismatch(j, "bool", path),
            },
            Ty::Int(go, min, max) => match &j.kind {
                Jk::Num(n) => match n.parse::<i64>() {
                    Ok(v) if (*min..=*max).contains(&v) => {
                        *into = Go::Scalar {
                            text: n.clone(),
                            plain: true,
                            at: j.at,
                        }
                    }
                    _ => self.type_error(j, go, format!("number {n}"), path),
                },
                _ => self.mismatch(j, go, path),
            },
            Ty::Strings(go) => self.list(j, go, into, path, |d, item, slot, p| {
                d.decode(item, &Ty::Str, slot, p)
            })?,
            Ty::Slice(s, go) => self.list(j, go, into, path, |d, item, slot, p| {
                d.decode(item, &Ty::Ptr(s), slot, p)
            })?,
            Ty::StrMap => self.map(j, "map[string]string", into, path, |d, v, slot, p| {
                // A map's element starts from zero for every key.
                *slot = Go::Zero;
                d.decode(v, &Ty::Str, slot, p)
            })?,
            Ty::ParameterMap => {
                self.map(j, "pipeline.ParameterMap", into, path, |d, v, slot, p| {
                    *slot = Go::Zero;
                    d.decode(v, &Ty::Ptr(&PARAMETER), slot, p)
                })?
            }
            Ty::Struct(s) | Ty::Ptr(s) => match &j.kind {
                Jk::Obj(entries) => {
                    if !matches!(into, Go::Map { .. }) {
                        *into = Go::Map {
                            entries: Vec::new(),
                            at: j.at,
                        };
                    }
                    for (key, value) in entries {
                        let Some((name, ty)) = s.field(key) else {
                            continue;
                        };
                        let slot = into.entry(name, value.at);
                        self.decode(value, ty, slot, &join(path, name))?;
                    }
                }
                _ => {
                    // A pointer is allocated before the value is found to be of the
                    // wrong type (a list's item of the wrong type is an empty struct).
                    if matches!(ty, Ty::Ptr(_)) && !matches!(into, Go::Map { .. }) {
                        *into = Go::Map {
                            entries: Vec::new(),
                            at: j.at,
                        };
                    }
                    self.mismatch(j, s.go, path);
                }
            },
            Ty::StringSliceMap => self.string_slice_map(j, into, path)?,
        }
        Ok(())
    }

    /// A slice: an array decoded element by element into the backing array.
    fn list(
        &mut self,
        j: &J,
        go: &'static str,
        into: &mut Go,
        path: &str,
        mut item: impl FnMut(&mut Self, &J, &mut Go, &str) -> Result<(), Stop>,
    ) -> Result<(), Stop> {
        let Jk::Arr(values) = &j.kind else {
            self.mismatch(j, go, path);
            return Ok(());
        };
        if values.is_empty() || !matches!(into, Go::List { .. }) {
            *into = Go::List {
                items: Vec::new(),
                len: 0,
                at: j.at,
            };
        }
        let Go::List { items, len, at } = into else {
            unreachable!("made a list above")
        };
        *at = j.at;
        for (i, value) in values.iter().enumerate() {
            if i >= items.len() {
                items.push(Go::Zero);
            }
            item(self, value, &mut items[i], &format!("{path}[{i}]"))?;
        }
        *len = values.len();
        Ok(())
    }

    /// A map of string keys: each entry stored, the map kept.
    fn map(
        &mut self,
        j: &J,
        go: &'static str,
        into: &mut Go,
        path: &str,
        mut value: impl FnMut(&mut Self, &J, &mut Go, &str) -> Result<(), Stop>,
    ) -> Result<(), Stop> {
        let Jk::Obj(entries) = &j.kind else {
            self.mismatch(j, go, path);
            return Ok(());
        };
        if !matches!(into, Go::Map { .. }) {
            *into = Go::Map {
                entries: Vec::new(),
                at: j.at,
            };
        }
        for (key, v) in entries {
            let slot = into.entry(key, v.at);
            value(self, v, slot, &join(path, key))?;
        }
        Ok(())
    }

    /// `raw.StringSliceMap.UnmarshalJSON` (`raw/map.go` lines 40–91): a `StringSlice` (a
    /// string, or a list of strings in which `null` is `""`) of `NAME=value` items, else
    /// an object of strings; it replaces what was there.
    fn string_slice_map(&mut self, j: &J, into: &mut Go, path: &str) -> Result<(), Stop> {
        let fail = |d: &Self| {
            Stop(GoJsonError::Decode {
                field: path.to_owned(),
                pos: d.positions.pos(j.at),
            })
        };
        let strings: Option<Vec<String>> = match &j.kind {
            Jk::Str(s) => Some(vec![s.clone()]),
            Jk::Arr(items) => items
                .iter()
                .map(|i| match &i.kind {
                    Jk::Str(s) => Some(s.clone()),
                    Jk::Null => Some(String::new()),
                    _ => None,
                })
                .collect(),
            _ => None,
        };
        let mut entries: Vec<(String, Go)> = Vec::new();
        let mut set = |key: &str, value: &str| {
            let value = Go::Scalar {
                text: value.to_owned(),
                plain: false,
                at: j.at,
            };
            match entries.iter_mut().find(|(k, _)| k == key) {
                Some((_, v)) => *v = value,
                None => entries.push((key.to_owned(), value)),
            }
        };
        if let Some(strings) = strings {
            for s in strings {
                let Some((k, v)) = s.split_once('=') else {
                    return Err(fail(self));
                };
                set(k, v);
            }
        } else if let Jk::Obj(values) = &j.kind {
            for (k, v) in values {
                match &v.kind {
                    Jk::Str(s) => set(k, s),
                    Jk::Null => set(k, ""),
                    _ => return Err(fail(self)),
                }
            }
        } else {
            return Err(fail(self));
        }
        *into = Go::Map { entries, at: j.at };
        Ok(())
    }
}

/// Writes the decoded value into `stream` as a node (`None` for a zero value, which is
/// left out of its struct).
fn emit(stream: &mut Stream, go: &Go, positions: &Positions) -> Option<NodeId> {
    let (value, at) = match go {
        Go::Zero => return None,
        Go::Scalar { text, plain, at } => (
            Value::Scalar {
                text: text.clone(),
                plain: *plain,
                merge: false,
            },
            *at,
        ),
        Go::List { items, len, at } => {
            let ids = items[..*len]
                .iter()
                .map(|item| emit(stream, item, positions).unwrap_or_else(|| null(stream)))
                .collect();
            (Value::Seq(ids), *at)
        }
        Go::Map { entries, at } => {
            let mut out = Vec::with_capacity(entries.len());
            for (key, value) in entries {
                let Some(value) = emit(stream, value, positions) else {
                    continue;
                };
                let key = push(
                    stream,
                    Value::Scalar {
                        text: key.clone(),
                        plain: false,
                        merge: false,
                    },
                    None,
                );
                out.push((key, value));
            }
            (Value::Map(out), *at)
        }
    };
    Some(push(stream, value, Some(positions.pos(at))))
}

fn null(stream: &mut Stream) -> NodeId {
    push(stream, Value::Null, None)
}

fn push(stream: &mut Stream, value: Value, pos: Option<Pos>) -> NodeId {
    stream.nodes.push(Node {
        value,
        tag: None,
        bad_base64: false,
        alias_name: None,
        written: None,
        pos,
    });
    stream.nodes.len() - 1
}

/// Whether `text` is JSON whose top level is an object with an `id` (matched as
/// encoding/json matches it, without regard to case) that is not `null`: a compiled build.
pub(crate) fn has_build_id(text: &str) -> bool {
    let mut parser = Parser {
        text: text.as_bytes(),
        i: 0,
        nodes: 0,
    };
    let Ok(J {
        kind: Jk::Obj(entries),
        ..
    }) = parser.document()
    else {
        return false;
    };
    // `null` has no effect on a string, so any other value sets it.
    entries
        .iter()
        .any(|(k, v)| folds_equal("id", k) && !matches!(v.kind, Jk::Null))
}

/// `json.Unmarshal(text, &build)` into go-vela/server v0.28.8's `pipeline.Build`: the
/// build as a one-document [`Stream`] whose mappings are its structs (keys their JSON
/// names; fields left at their zero value absent) and maps, or the error encoding/json
/// returns (see the [module](self)).
pub(crate) fn load(text: &str) -> Result<Stream, GoJsonError> {
    let positions = Positions::new(text);
    let mut parser = Parser {
        text: text.as_bytes(),
        i: 0,
        nodes: 0,
    };
    let root = parser.document().map_err(|e| {
        let pos = positions.pos(e.at);
        if e.limit {
            GoJsonError::Limit {
                message: e.message,
                pos,
            }
        } else {
            GoJsonError::Syntax {
                message: e.message,
                pos,
            }
        }
    })?;
    let mut decoder = Decoder {
        positions: &positions,
        first: None,
    };
    let mut build = Go::Zero;
    let mut stream = Stream::default();
    let root = match &root.kind {
        // `null` leaves the build zero: an empty build.
        Jk::Obj(_) | Jk::Null => {
            if let Err(Stop(e)) = decoder.decode(&root, &Ty::Struct(&BUILD), &mut build, "") {
                return Err(e);
            }
            if let Some(e) = decoder.first {
                return Err(e);
            }
            match emit(&mut stream, &build, &positions) {
                Some(id) => id,
                None => push(&mut stream, Value::Map(Vec::new()), Some(positions.pos(0))),
            }
        }
        // Not an object at all ("json: cannot unmarshal array into Go value of type
        // pipeline.Build"): the pipeline reader says what the top level is instead.
        Jk::Arr(_) => push(
            &mut stream,
            Value::Seq(Vec::new()),
            Some(positions.pos(root.at)),
        ),
        _ => push(
            &mut stream,
            Value::Scalar {
                text: String::new(),
                plain: false,
                merge: false,
            },
            Some(positions.pos(root.at)),
        ),
    };
    stream.documents.push(Document {
        root: Some(root),
        duplicate: None,
    });
    Ok(stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Go 1.19's `json.Unmarshal` of each text into the shapes and tags of
    /// `pipeline.Build` (probe outside the tree): its `SyntaxError` message and offset.
    #[test]
    fn syntax_errors_are_worded_as_encoding_json_words_them() {
        for (text, message, pos) in [
            (
                "{a:1}",
                "invalid character 'a' looking for beginning of object key string",
                (1, 2),
            ),
            (
                "{\"a\":1,}",
                "invalid character '}' looking for beginning of object key string",
                (1, 8),
            ),
            (
                "{\"a\":1} x",
                "invalid character 'x' after top-level value",
                (1, 9),
            ),
            ("", "unexpected end of JSON input", (1, 1)),
        ] {
            let Err(GoJsonError::Syntax { message: m, pos: p }) = load(text) else {
                panic!("{text} loads");
            };
            assert_eq!((m.as_str(), (p.line, p.column)), (message, pos), "{text}");
        }
    }
}
