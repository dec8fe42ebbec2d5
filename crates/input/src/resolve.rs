//! How go.yaml.in/yaml/v3 v3.0.4 resolves a scalar's tag (`resolve.go` `resolve`, lines
//! 126–292): the tag its decoder names in a type error ("cannot unmarshal !!int `5`
//! into ..."), and the values a typed field takes from it.

use crate::refusal::DecodeFailure;
use crate::yaml::{NodeId, Stream, Value};

/// A plain scalar's resolved value, as far as the decoders of a typed field look at it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Resolved {
    /// `!!null`: empty, `~`, `null`, `Null`, `NULL`.
    Null,
    /// `!!bool`: `true`, `True`, `TRUE`, `false`, `False`, `FALSE` (YAML 1.2's words only;
    /// `yes` and `on` are strings, taken by a typed `bool` field alone).
    Bool,
    /// `!!int` that fits an `int64`.
    Int(i64),
    /// `!!int` over `int64`'s range that fits a `uint64`.
    Uint(u64),
    /// `!!float`.
    Float(f64),
    /// `!!timestamp` (a plain `2006-1-2` date, with or without a time).
    Timestamp,
    /// `!!merge` (`<<`).
    Merge,
    /// `!!str`: anything else, and every quoted or `!!str`-tagged scalar.
    Str,
}

impl Resolved {
    /// The short tag yaml.v3 prints: `!!int`, `!!str`, ...
    pub(crate) fn tag(self) -> &'static str {
        match self {
            Resolved::Null => "!!null",
            Resolved::Bool => "!!bool",
            Resolved::Int(_) | Resolved::Uint(_) => "!!int",
            Resolved::Float(_) => "!!float",
            Resolved::Timestamp => "!!timestamp",
            Resolved::Merge => "!!merge",
            Resolved::Str => "!!str",
        }
    }
}

/// What go-yaml v3 decodes the scalar `id` of `doc` to, its explicit tag included
/// (`decode.go` `scalar`, lines 806–820, and `resolve`'s tag check, `resolve.go` lines
/// 131–152): without a tag, [`resolve`]; `!!str` and `!!binary`, a string; a core tag
/// (`!!bool`, `!!int`, `!!float`, `!!null`, `!!timestamp`), the text resolved without a
/// tag (a timestamp only under `!!timestamp`), which must be of that tag (an `!!int`
/// under `!!float` becomes a float); any other tag (`!foo`, `!!seq`), the text as a
/// string. A null node, or one that is no scalar, is [`Resolved::Null`].
///
/// # Errors
/// What stops go-yaml v3 where it decodes the scalar (`failf`, no line): a text not of
/// its core tag ([`DecodeFailure::Tag`], "cannot decode !!str `alpine` as a !!int"), a
/// `!!binary` that is not base64 ([`DecodeFailure::Base64`]).
pub(crate) fn resolve_node(doc: &Stream, id: NodeId) -> Result<Resolved, DecodeFailure> {
    let node = &doc.nodes[doc.resolve(id)];
    let Value::Scalar { plain, text, .. } = &node.value else {
        return Ok(Resolved::Null);
    };
    let Some(tag) = node.tag.as_deref() else {
        return Ok(resolve(*plain, text));
    };
    match tag {
        "!!binary" if node.bad_base64 => Err(DecodeFailure::Base64),
        "!!bool" | "!!int" | "!!float" | "!!null" | "!!timestamp" => {
            let r = match resolve(true, text) {
                Resolved::Timestamp if tag != "!!timestamp" => resolve_number(text),
                r => r,
            };
            match r {
                r if r.tag() == tag => Ok(r),
                Resolved::Int(i) if tag == "!!float" => Ok(Resolved::Float(i as f64)),
                r => Err(DecodeFailure::Tag {
                    found: r.tag().to_owned(),
                    text: text.clone(),
                    tag: tag.to_owned(),
                }),
            }
        }
        _ => Ok(Resolved::Str),
    }
}

/// The tag go-yaml v3's `terror` names for a node it cannot decode into a field
/// (`decode.go` lines 318–331: the node's tag, which the parser sets from the explicit
/// tag, else `!!str` for a quoted scalar, the resolved tag for a plain one, `!!seq`,
/// `!!map`), and the value it quotes after it (none for `!!seq` and `!!map`; a tagged
/// collection's is empty).
pub(crate) fn terror_tag(doc: &Stream, id: NodeId) -> (String, Option<String>) {
    let node = &doc.nodes[doc.resolve(id)];
    let (default, text) = match &node.value {
        Value::Scalar { plain, text, .. } => (resolve(*plain, text).tag(), text.as_str()),
        Value::Seq(_) => ("!!seq", ""),
        Value::Map(_) => ("!!map", ""),
        Value::Null | Value::Alias(_) => ("!!null", ""),
    };
    let tag = node.tag.as_deref().unwrap_or(default);
    let value = (!matches!(tag, "!!seq" | "!!map")).then(|| quoted_value(text));
    (tag.to_owned(), value)
}

/// [`resolve`] of a plain text past the timestamp check, which only an untagged or
/// `!!timestamp` scalar gets (`resolve.go` line 203): `2015-01-01` is then a `!!str`.
/// An integer past both ranges is tried as a float next, as `resolve` does
/// (`99999999999999999999` is `!!float` 1e+20; a hexadecimal one is no float).
fn resolve_number(text: &str) -> Resolved {
    let plain: String = text.chars().filter(|&c| c != '_').collect();
    if let Some(v) = go_parse_int(&plain) {
        if let Ok(i) = i64::try_from(v) {
            return Resolved::Int(i);
        }
        // strconv.ParseUint takes no sign.
        if let Ok(u) = u64::try_from(v)
            && !plain.starts_with('+')
        {
            return Resolved::Uint(u);
        }
    }
    if yaml_style_float(&plain)
        && let Some(f) = go_parse_float(&plain)
    {
        return Resolved::Float(f);
    }
    Resolved::Str
}

/// What yaml.v3 resolves a scalar to; `plain` is false for a quoted or `!!str`-tagged
/// one, which is always a string.
pub(crate) fn resolve(plain: bool, text: &str) -> Resolved {
    if !plain {
        return Resolved::Str;
    }
    match text {
        "true" | "True" | "TRUE" | "false" | "False" | "FALSE" => return Resolved::Bool,
        "" | "~" | "null" | "Null" | "NULL" => return Resolved::Null,
        ".nan" | ".NaN" | ".NAN" => return Resolved::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Resolved::Float(f64::INFINITY);
        }
        "-.inf" | "-.Inf" | "-.INF" => return Resolved::Float(f64::NEG_INFINITY),
        "<<" => return Resolved::Merge,
        _ => {}
    }
    match text.as_bytes()[0] {
        b'.' => match go_parse_float(text) {
            // strconv.ParseFloat: Rust's parser takes the same decimal forms; `inf`
            // and `nan` cannot start with `.`.
            Some(f) if go_float_syntax(text) => Resolved::Float(f),
            _ => Resolved::Str,
        },
        b'0'..=b'9' | b'+' | b'-' => {
            if timestamp(text) {
                return Resolved::Timestamp;
            }
            resolve_number(text)
        }
        _ => Resolved::Str,
    }
}

/// strconv.ParseFloat(s, 64) of a decimal float (`s` already matched the float syntax):
/// `None` past f64's range, which Go refuses with `ErrRange` (`1e400`, so `resolve` keeps
/// it a `!!str`); an underflow is 0, as in Go.
fn go_parse_float(s: &str) -> Option<f64> {
    s.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// Whether `text` is a float as strconv.ParseFloat reads one starting with `.`: digits,
/// an optional exponent, nothing else (no `_`, no hex).
fn go_float_syntax(text: &str) -> bool {
    yaml_style_float(text)
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$` (`resolve.go` line 124).
fn yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if i < b.len() && b[i] == b'.' {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if i < b.len() && b[i] == b'.' {
            i += 1;
            digits(&mut i);
        }
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// strconv.ParseInt(s, 0, 64) or ParseUint(s, 0, 64) as one: an optional sign, then
/// `0x`, `0o`, `0b` or a leading `0` (octal) or decimal digits; then yaml.v3's own
/// `0b`/`-0b`/`0o`/`-0o` forms, which base 0 already reads. The value, unbounded to
/// `i128`, or `None`.
fn go_parse_int(s: &str) -> Option<i128> {
    let (negative, rest) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let (radix, digits) = if let Some(d) = rest.strip_prefix("0x").or(rest.strip_prefix("0X")) {
        (16, d)
    } else if let Some(d) = rest.strip_prefix("0o").or(rest.strip_prefix("0O")) {
        (8, d)
    } else if let Some(d) = rest.strip_prefix("0b").or(rest.strip_prefix("0B")) {
        (2, d)
    } else if rest.len() > 1 && rest.starts_with('0') {
        (8, &rest[1..])
    } else {
        (10, rest)
    };
    if digits.is_empty() || digits.len() > 70 {
        return None;
    }
    let mut v: i128 = 0;
    for c in digits.chars() {
        v = v
            .checked_mul(radix)?
            .checked_add(i128::from(c.to_digit(radix as u32)?))?;
    }
    Some(if negative { -v } else { v })
}

/// A plain scalar yaml.v3 reads as a timestamp (`resolve.go` `parseTimestamp`, lines
/// 356–380): four digits and a `-`, then Go's `time.Parse` with one of
/// `allowedTimestampFormats` succeeds: `2006-1-2T15:4:5.999999999Z07:00`, the same with
/// `t`, `2006-1-2 15:4:5.999999999`, `2006-1-2` ([`go_time_parse`]). So `2015-02-30`
/// (no such day), `2001-12-14 21:59:43.10 -5` (a zone the third layout has not) and
/// `2001-12-14T21:59:43` (no zone) are strings.
fn timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    if digits != 4 || b.get(4) != Some(&b'-') {
        return false;
    }
    use Chunk::*;
    const TIME: [Chunk; 7] = [Hour, Lit(":"), Minute, Lit(":"), Second, Frac9, Zone];
    let date = [Year, Lit("-"), Month, Lit("-"), Day];
    let with = |sep: &'static str, time: &[Chunk]| {
        let mut layout = date.to_vec();
        layout.push(Lit(sep));
        layout.extend_from_slice(time);
        layout
    };
    [
        with("T", &TIME),
        with("t", &TIME),
        with(" ", &TIME[..6]),
        date.to_vec(),
    ]
    .iter()
    .any(|layout| go_time_parse(layout, s))
}

/// A piece of a Go time layout, as `time.nextStdChunk` splits the four layouts above.
#[derive(Clone, Copy)]
enum Chunk {
    /// Literal text (`skip`: a blank matches any run of blanks).
    Lit(&'static str),
    /// `2006`: four digits.
    Year,
    /// `1`: one or two digits, 1–12.
    Month,
    /// `2`: one or two digits, checked against the month's days at the end.
    Day,
    /// `15`: one or two digits, 0–23.
    Hour,
    /// `4`: one or two digits, 0–59.
    Minute,
    /// `5`: one or two digits, 0–59.
    Second,
    /// `.999999999`: optional; a `.` or `,` and up to nine digits.
    Frac9,
    /// `Z07:00`: `Z`, or a sign, two digits, `:`, two digits (hours up to 24, minutes up
    /// to 60, as Go 1.20 and later check them).
    Zone,
}

/// Go's `time.Parse(layout, value) == nil` for a layout of [`Chunk`]s (Go's
/// `time/format.go` `Parse`, `getnum`, `skip`; the ranges of `parse`).
fn go_time_parse(layout: &[Chunk], value: &str) -> bool {
    // `getnum(s, false)`: one digit, or two.
    fn getnum(v: &[u8]) -> Option<(u32, &[u8])> {
        let first = *v.first().filter(|c| c.is_ascii_digit())?;
        match v.get(1).filter(|c| c.is_ascii_digit()) {
            Some(&second) => Some((
                u32::from(first - b'0') * 10 + u32::from(second - b'0'),
                &v[2..],
            )),
            None => Some((u32::from(first - b'0'), &v[1..])),
        }
    }
    fn two_digits(v: &[u8]) -> Option<u32> {
        (v.len() == 2 && v.iter().all(u8::is_ascii_digit))
            .then(|| u32::from(v[0] - b'0') * 10 + u32::from(v[1] - b'0'))
    }
    let mut v = value.as_bytes();
    let (mut year, mut month, mut day) = (0u32, 0u32, 0u32);
    for chunk in layout {
        match *chunk {
            Chunk::Lit(text) => {
                for &c in text.as_bytes() {
                    if c == b' ' {
                        if v.first().is_some_and(|&x| x != b' ') {
                            return false;
                        }
                        while v.first() == Some(&b' ') {
                            v = &v[1..];
                        }
                    } else if v.first() == Some(&c) {
                        v = &v[1..];
                    } else {
                        return false;
                    }
                }
            }
            Chunk::Year => {
                if v.len() < 4 || !v[..4].iter().all(u8::is_ascii_digit) {
                    return false;
                }
                year = v[..4].iter().fold(0, |n, &c| n * 10 + u32::from(c - b'0'));
                v = &v[4..];
            }
            Chunk::Month | Chunk::Day | Chunk::Hour | Chunk::Minute | Chunk::Second => {
                let Some((n, rest)) = getnum(v) else {
                    return false;
                };
                let ok = match *chunk {
                    Chunk::Month => (1..=12).contains(&n),
                    Chunk::Day => true,
                    Chunk::Hour => n < 24,
                    _ => n < 60,
                };
                if !ok {
                    return false;
                }
                match *chunk {
                    Chunk::Month => month = n,
                    Chunk::Day => day = n,
                    _ => {}
                }
                v = rest;
            }
            Chunk::Frac9 => {
                if v.len() >= 2 && matches!(v[0], b'.' | b',') && v[1].is_ascii_digit() {
                    let n = v[1..]
                        .iter()
                        .take(9)
                        .take_while(|c| c.is_ascii_digit())
                        .count();
                    v = &v[1 + n..];
                }
            }
            Chunk::Zone => {
                if v.first() == Some(&b'Z') {
                    v = &v[1..];
                    continue;
                }
                if v.len() < 6 || v[3] != b':' || !matches!(v[0], b'+' | b'-') {
                    return false;
                }
                match (two_digits(&v[1..3]), two_digits(&v[4..6])) {
                    (Some(h), Some(m)) if h <= 24 && m <= 60 => {}
                    _ => return false,
                }
                v = &v[6..];
            }
        }
    }
    if !v.is_empty() {
        return false;
    }
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    (1..=days).contains(&day)
}

/// The value as yaml.v3's `terror` quotes it after the tag: `` `5` ``, or for a value over
/// 10 bytes its first 7 and `...` (cut at a character boundary here, where Go cuts bytes).
pub(crate) fn quoted_value(text: &str) -> String {
    if text.len() > 10 {
        let mut end = 7;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        format!("`{}...`", &text[..end])
    } else {
        format!("`{text}`")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each value checked against go-yaml v3.0.4 itself, built here with Go 1.19:
    /// `yaml.Unmarshal("v: X")` into an `interface{}` gives an `int`, `uint64`,
    /// `float64`, `time.Time`, `bool`, nil or `string` as asserted.
    #[test]
    fn plain_scalars_resolve_as_yaml_v3() {
        assert_eq!(resolve(true, "5"), Resolved::Int(5));
        assert_eq!(resolve(true, "-5"), Resolved::Int(-5));
        assert_eq!(resolve(true, "0b10"), Resolved::Int(2));
        assert_eq!(resolve(true, "-0b10"), Resolved::Int(-2));
        assert_eq!(resolve(true, "0o10"), Resolved::Int(8));
        assert_eq!(resolve(true, "010"), Resolved::Int(8));
        assert_eq!(resolve(true, "1_000"), Resolved::Int(1000));
        assert_eq!(resolve(true, "0x_0A"), Resolved::Int(10));
        assert_eq!(
            resolve(true, "18446744073709551615"),
            Resolved::Uint(u64::MAX)
        );
        assert_eq!(
            resolve(true, "9223372036854775808"),
            Resolved::Uint(1 << 63)
        );
        assert_eq!(resolve(true, "1e3"), Resolved::Float(1000.0));
        assert_eq!(resolve(true, ".5"), Resolved::Float(0.5));
        assert_eq!(resolve(true, "1.5"), Resolved::Float(1.5));
        assert_eq!(resolve(true, "-.inf"), Resolved::Float(f64::NEG_INFINITY));
        assert_eq!(resolve(true, "2015-02-24"), Resolved::Timestamp);
        assert_eq!(resolve(true, "2015-2-4"), Resolved::Timestamp);
        assert_eq!(resolve(true, "2015-13-01"), Resolved::Str);
        assert_eq!(resolve(true, "+5"), Resolved::Int(5));
        assert_eq!(resolve(true, "+0x10"), Resolved::Int(16));
        assert_eq!(
            resolve(true, "2001-12-14t21:59:43.10-05:00"),
            Resolved::Timestamp
        );
        assert_eq!(resolve(true, "true"), Resolved::Bool);
        assert_eq!(resolve(true, "FALSE"), Resolved::Bool);
        assert_eq!(resolve(true, "~"), Resolved::Null);
        for s in [
            "yes", "no", "on", "off", "y", "tRue", "1.2.3", "0x", "1e", "v1", "+",
        ] {
            assert_eq!(resolve(true, s), Resolved::Str, "{s}");
        }
        // `09` is no octal (strconv fails) but matches the float pattern.
        assert_eq!(resolve(true, "09"), Resolved::Float(9.0));
        // Quoted, always a string.
        assert_eq!(resolve(false, "5"), Resolved::Str);
        assert_eq!(resolve(false, "true"), Resolved::Str);
    }

    /// Past int64 and uint64 an integer is a `!!float` (strconv.ParseFloat after
    /// ParseInt and ParseUint fail, `resolve.go` lines 224–235), and past f64 a float is a
    /// `!!str` (ParseFloat's ErrRange). Each checked with go.yaml.in/yaml/v3 v3.0.4
    /// (built with Go 1.19), `yaml.Unmarshal` of the list into an `interface{}`.
    #[test]
    fn numbers_past_their_ranges_resolve_as_yaml_v3() {
        assert_eq!(resolve(true, "99999999999999999999"), Resolved::Float(1e20));
        assert_eq!(
            resolve(true, "-99999999999999999999"),
            Resolved::Float(-1e20)
        );
        assert_eq!(
            resolve(true, "+18446744073709551615"),
            Resolved::Float(18446744073709551615.0)
        );
        assert_eq!(
            resolve(true, "-9223372036854775809"),
            Resolved::Float(-9223372036854775809.0)
        );
        assert_eq!(
            resolve(true, "1_000_000_000_000_000_000_000"),
            Resolved::Float(1e21)
        );
        // A leading 0 makes no octal past the range: the decimal float pattern matches.
        assert_eq!(
            resolve(true, "077777777777777777777777777"),
            Resolved::Float(7.777_777_777_777_777e25)
        );
        for s in [
            "1e400",
            "-1e400",
            ".5e400",
            "1_0e400",
            "0x1ffffffffffffffff",
            "0o7777777777777777777777777",
        ] {
            assert_eq!(resolve(true, s), Resolved::Str, "{s}");
        }
        assert_eq!(resolve(true, "1e-400"), Resolved::Float(0.0));
    }

    /// Each checked with go.yaml.in/yaml/v3 v3.0.4 (Go 1.19): `yaml.Unmarshal` into an
    /// `interface{}` gives a `time.Time` for the first list and a `string` for the second
    /// (`resolve.go` `allowedTimestampFormats`, parsed by `time.Parse`).
    #[test]
    fn timestamps_are_yaml_v3_s_layouts_as_go_parses_them() {
        for s in [
            "2015-02-28",
            "2016-02-29",
            "0000-01-01",
            "2015-2-3",
            "2001-12-14 21:59:43",
            "2001-12-14 1:2:3.5",
            "2001-12-14  1:2:3",
            "2001-12-14t21:59:43.10-05:00",
            "2001-12-14T1:2:3+05:00",
        ] {
            assert_eq!(resolve(true, s), Resolved::Timestamp, "{s}");
        }
        for s in [
            "2015-02-29",
            "2015-02-30",
            "2001-12-14 21:59:43.10 -5",
            "2001-12-14T25:00:00Z",
            "2001-12-14T21:59:43",
            "2001-12-14T21:59:43.1234567891Z",
            "2001-12-14T1:2:3+0500",
            "2001-12-14 21:59:60",
            "2001-12-14T21:59:43z",
        ] {
            assert_eq!(resolve(true, s), Resolved::Str, "{s}");
        }
    }

    #[test]
    fn values_are_quoted_and_cut_as_terror_does() {
        assert_eq!(quoted_value("5"), "`5`");
        assert_eq!(quoted_value("0123456789"), "`0123456789`");
        assert_eq!(quoted_value("0123456789a"), "`0123456...`");
        assert_eq!(quoted_value("éééééé"), "`ééé...`");
    }
}
