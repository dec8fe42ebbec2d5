//! How go.yaml.in/yaml/v3 v3.0.4 resolves a scalar's tag (`resolve.go` `resolve`, lines
//! 126–292): the tag its decoder names in a type error ("cannot unmarshal !!int `5`
//! into ..."), and the values a typed field takes from it.

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
            // An integer past both ranges is tried as a float next, as `resolve` does
            // (`99999999999999999999` is `!!float` 1e+20; a hexadecimal one is no float).
            if yaml_style_float(&plain)
                && let Some(f) = go_parse_float(&plain)
            {
                return Resolved::Float(f);
            }
            Resolved::Str
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

/// A plain scalar yaml.v3 reads as a timestamp (`parseTimestamp`): four digits and a
/// `-`, then one of `2006-1-2T15:4:5.999999999Z07:00` (or `t`), `2006-1-2 15:4:5.999999999`,
/// `2006-1-2`. Checked here as the date part (`YYYY-M-D`, month 1–12, day 1–31), then
/// nothing, or a `T`, `t` or blank and a `H:M:S` time.
fn timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let rest = &s[5..];
    let (date, time) = match rest.find(['T', 't', ' ']) {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let mut parts = date.split('-');
    let (Some(m), Some(d), None) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let small = |p: &str, max: u32| {
        (1..=2).contains(&p.len())
            && p.bytes().all(|c| c.is_ascii_digit())
            && p.parse::<u32>().is_ok_and(|v| (1..=max).contains(&v))
    };
    if !small(m, 12) || !small(d, 31) {
        return false;
    }
    match time {
        None => true,
        Some(t) => {
            let hms: Vec<&str> = t.splitn(3, ':').collect();
            hms.len() == 3
                && hms[..2]
                    .iter()
                    .all(|p| (1..=2).contains(&p.len()) && p.bytes().all(|c| c.is_ascii_digit()))
                && hms[2].bytes().next().is_some_and(|c| c.is_ascii_digit())
        }
    }
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

    #[test]
    fn values_are_quoted_and_cut_as_terror_does() {
        assert_eq!(quoted_value("5"), "`5`");
        assert_eq!(quoted_value("0123456789"), "`0123456789`");
        assert_eq!(quoted_value("0123456789a"), "`0123456...`");
        assert_eq!(quoted_value("éééééé"), "`ééé...`");
    }
}
