//! `${VAR}` substitution with the syntax and quirks of drone/envsubst, which Vela uses
//! (the compiler's `SubstituteSteps`/`SubstituteStages` and the worker's
//! `Container.Substitute`).
//!
//! Pure: [`Template::parse`] reads a string into text and expressions, and
//! [`Template::eval`] fills the expressions from a lookup function. The forms, as the
//! upstream parser accepts them:
//!
//! | form | value |
//! |---|---|
//! | `${V}` | the value |
//! | `${V=d}`, `${V:=d}`, `${V:-d}`, `${V:?d}`, `${V:+d}` | the value, or `d` when the value is empty (upstream gives all five this one meaning) |
//! | `${V^}`, `${V^^}`, `${V,}`, `${V,,}` | first character / all upper case, first / all lower case |
//! | `${V#p}`, `${V##p}` | the shortest / longest prefix matching glob `p` removed |
//! | `${V%p}`, `${V%%p}` | the shortest / longest suffix matching glob `p` removed |
//! | `${V/a/b}`, `${V//a/b}` | the first / every `a` replaced by `b` (`b` may be empty: `${V/a/}`) |
//! | `${V/#a/b}`, `${V/%a/b}` | `a` replaced by `b` when the value starts / ends with it |
//! | `${V:off}`, `${V:off:len}` | a substring, in bytes; a negative offset counts from the end |
//! | `${#V}` | the length in bytes |
//! | `$$` | a literal `$` (outside expressions and in replace patterns) |
//!
//! Arguments may nest (`${a=${b}}`, `${a=pre-${b}-post}`); in replace patterns `\/` is a
//! literal `/` and `\\` a literal `\`. A bare `$VAR` (without braces) is plain text.
//! Upstream quirks kept: `${V-d}` without the colon is "missing closing brace"; an
//! offset or length that is not a number leaves the value unchanged; `%` and `%%`
//! reverse the value and the pattern and trim a prefix, so a pattern with a bracket
//! class does not match there; the globs' `*` also matches `/`.
//!
//! Where the upstream Go code panics (a negative substring length, `${V:0:-1}`), this
//! is [`SubstError::NegativeLength`] instead. Hostile input ends in bounded time and
//! memory: nesting deeper than [`MAX_DEPTH`], a result longer than [`MAX_OUTPUT`] bytes
//! and a `#`/`%` trim of a value longer than [`MAX_TRIM`] characters are errors of
//! ours ([`SubstError::TooDeep`], [`SubstError::TooLarge`],
//! [`SubstError::TrimTooLong`]), and globs match without
//! backtracking blow-up.

/// Most nested `${` inside one another.
pub const MAX_DEPTH: usize = 64;
/// Longest result of one evaluation, in bytes (1 MiB; an image reference is at most a
/// few hundred).
pub const MAX_OUTPUT: usize = 1 << 20;
/// Longest value a `#`, `##`, `%` or `%%` trims, in characters.
pub const MAX_TRIM: usize = 4096;

use std::fmt;

/// Why a string is not a valid substitution template; the messages are upstream's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SubstError {
    /// `bad substitution`: an expression that is not one of the forms (`${a:1x}`,
    /// `${a/x}`, `${#}`).
    BadSubstitution,
    /// `missing closing brace`: `${a` at the end, or an unknown operator (`${a-b}`).
    MissingClosingBrace,
    /// `unable to parse variable name`: `${}`, `${-a}`.
    VariableName,
    /// `unable to parse substitution within function`: an argument is missing or not
    /// closed (`${a:}`, `${a#}`, `${a=b`).
    FuncSubstitution,
    /// `unable to parse default function`.
    DefaultFunction,
    /// A substring with a negative length (`${a:0:-1}`), on which upstream's Go code
    /// panics (a slice out of range).
    NegativeLength,
    /// Ours: expressions nested more than [`MAX_DEPTH`] deep.
    TooDeep,
    /// Ours: a result over [`MAX_OUTPUT`] bytes.
    TooLarge,
    /// Ours: a `#`, `##`, `%` or `%%` trim of a value over [`MAX_TRIM`] characters.
    TrimTooLong,
}

impl fmt::Display for SubstError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::BadSubstitution => "bad substitution",
            Self::MissingClosingBrace => "missing closing brace",
            Self::VariableName => "unable to parse variable name",
            Self::FuncSubstitution => "unable to parse substitution within function",
            Self::DefaultFunction => "unable to parse default function",
            Self::NegativeLength => {
                "bad substitution: negative substring length (upstream's Go code panics on it)"
            }
            Self::TooDeep => "expressions nested more than 64 deep (pullcheck's limit)",
            Self::TooLarge => "the substituted text is over 1 MiB (pullcheck's limit)",
            Self::TrimTooLong => {
                "a `#`/`%` trim of a value over 4096 characters (pullcheck's limit)"
            }
        })
    }
}

impl SubstError {
    /// Whether this is a bound of pullcheck's own ([`SubstError::TooDeep`],
    /// [`SubstError::TooLarge`], [`SubstError::TrimTooLong`]), which upstream does not have: Vela substitutes such a
    /// text (or runs out of memory), so it is no refusal of Vela's.
    pub fn is_own_limit(self) -> bool {
        matches!(self, Self::TooDeep | Self::TooLarge | Self::TrimTooLong)
    }
}

impl std::error::Error for SubstError {}

/// A parsed template: text and expressions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Expr(Expr),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Expr {
    /// The variable.
    name: String,
    /// The operator as written (`""` for `${V}`, `:-`, `//`, `#` for `${#V}` ...).
    op: String,
    /// The arguments, each a template of its own (nested expressions).
    args: Vec<Template>,
}

/// Characters of a variable name: Unicode letters and digits, and `_` (as Go's
/// `unicode.IsLetter`/`IsDigit`).
fn is_ident(c: char) -> bool {
    c.is_alphabetic() || c.is_numeric() || c == '_'
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
    depth: usize,
    /// Where the top-level `${` of the expression that failed to parse starts, in
    /// characters.
    failed_at: usize,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, n: usize) -> Option<char> {
        self.chars.get(self.pos + n).copied()
    }

    fn at_open(&self) -> bool {
        self.peek() == Some('$') && self.peek_at(1) == Some('{')
    }

    /// Top level: text (`$$` is `$`) and expressions, to the end.
    fn top(&mut self) -> Result<Vec<Part>, SubstError> {
        let mut parts = Vec::new();
        let mut text = String::new();
        while let Some(c) = self.peek() {
            if self.at_open() {
                if !text.is_empty() {
                    parts.push(Part::Text(std::mem::take(&mut text)));
                }
                self.failed_at = self.pos;
                self.pos += 2;
                parts.push(Part::Expr(self.expr()?));
                continue;
            }
            if c == '$' && self.peek_at(1) == Some('$') {
                text.push('$');
                self.pos += 2;
                continue;
            }
            text.push(c);
            self.pos += 1;
        }
        if !text.is_empty() {
            parts.push(Part::Text(text));
        }
        Ok(parts)
    }

    /// After `${`: one expression, through its `}`.
    fn expr(&mut self) -> Result<Expr, SubstError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(SubstError::TooDeep);
        }
        let expr = self.expr_body();
        self.depth -= 1;
        expr
    }

    fn expr_body(&mut self) -> Result<Expr, SubstError> {
        if self.peek() == Some('#') {
            self.pos += 1;
            let name = self.ident();
            if name.is_empty() {
                return Err(SubstError::BadSubstitution);
            }
            self.close()?;
            return Ok(Expr {
                name,
                op: "#".into(),
                args: Vec::new(),
            });
        }
        let name = self.ident();
        if name.is_empty() {
            return Err(SubstError::VariableName);
        }
        match self.peek() {
            Some(':') if matches!(self.peek_at(1), Some('=' | '-' | '?' | '+')) => {
                self.default(name, 2)
            }
            Some('=') => self.default(name, 1),
            Some(':') => self.substring(name),
            Some(',' | '^') => {
                let op = self.run(|c, i| matches!(c, ',' | '^') && i < 2);
                self.close()?;
                Ok(Expr {
                    name,
                    op,
                    args: Vec::new(),
                })
            }
            Some('/') => self.replace(name),
            Some(c @ ('#' | '%')) => {
                let op = self.run(|x, i| x == c && i < 2);
                let arg = self.param(|c| c != '}', false)?;
                self.close()?;
                Ok(Expr {
                    name,
                    op,
                    args: vec![arg],
                })
            }
            Some('}') => {
                self.pos += 1;
                Ok(Expr {
                    name,
                    op: String::new(),
                    args: Vec::new(),
                })
            }
            _ => Err(SubstError::MissingClosingBrace),
        }
    }

    fn ident(&mut self) -> String {
        self.run(|c, _| is_ident(c))
    }

    /// The longest run of characters that `accept(c, index in the run)` takes.
    fn run(&mut self, accept: impl Fn(char, usize) -> bool) -> String {
        let mut out = String::new();
        let mut i = 0;
        while let Some(c) = self.peek() {
            if !accept(c, i) {
                break;
            }
            out.push(c);
            self.pos += 1;
            i += 1;
        }
        out
    }

    fn close(&mut self) -> Result<(), SubstError> {
        if self.peek() == Some('}') {
            self.pos += 1;
            Ok(())
        } else {
            Err(SubstError::BadSubstitution)
        }
    }

    /// One argument: a nested expression, or a run of text that `accept` takes, up to
    /// the next `${`; with `escapes`, `$$`, `\/` and `\\` are one character. Nothing at
    /// all is [`SubstError::FuncSubstitution`].
    fn param(
        &mut self,
        accept: impl Fn(char) -> bool,
        escapes: bool,
    ) -> Result<Template, SubstError> {
        if self.at_open() {
            self.pos += 2;
            return Ok(Template {
                parts: vec![Part::Expr(self.expr()?)],
            });
        }
        let mut text = String::new();
        while let Some(c) = self.peek() {
            if self.at_open() {
                break;
            }
            if escapes {
                let next = self.peek_at(1);
                if (c == '$' && next == Some('$'))
                    || (c == '\\' && matches!(next, Some('/' | '\\')))
                {
                    if let Some(n) = next {
                        text.push(n);
                    }
                    self.pos += 2;
                    continue;
                }
            }
            if !accept(c) {
                break;
            }
            text.push(c);
            self.pos += 1;
        }
        if text.is_empty() {
            return Err(SubstError::FuncSubstitution);
        }
        Ok(Template {
            parts: vec![Part::Text(text)],
        })
    }

    /// `=`, `:=`, `:-`, `:?`, `:+`, then any number of arguments up to `}`.
    fn default(&mut self, name: String, op_len: usize) -> Result<Expr, SubstError> {
        let op: String = self.chars[self.pos..self.pos + op_len].iter().collect();
        self.pos += op_len;
        let mut parts = Vec::new();
        loop {
            match self.peek() {
                Some('}') => {
                    self.pos += 1;
                    break;
                }
                None => return Err(SubstError::FuncSubstitution),
                Some(_) => parts.extend(self.param(|c| c != '}', false)?.parts),
            }
        }
        let args = if parts.is_empty() {
            Vec::new()
        } else {
            vec![Template { parts }]
        };
        Ok(Expr { name, op, args })
    }

    /// `:off}` or `:off:len}`.
    fn substring(&mut self, name: String) -> Result<Expr, SubstError> {
        self.pos += 1;
        let offset = self.param(|c| c != ':' && c != '}', false)?;
        let colons = self.run(|c, _| c == ':');
        if colons.is_empty() {
            self.close()?;
            return Ok(Expr {
                name,
                op: ":".into(),
                args: vec![offset],
            });
        }
        let length = self.param(|c| c != '}', false)?;
        self.close()?;
        Ok(Expr {
            name,
            op: ":".into(),
            args: vec![offset, length],
        })
    }

    /// `/a/b}`, `//a/b}`, `/#a/b}`, `/%a/b}`; `b` may be empty.
    fn replace(&mut self, name: String) -> Result<Expr, SubstError> {
        self.pos += 1;
        let mut op = "/".to_owned();
        if let Some(c @ ('/' | '#' | '%')) = self.peek() {
            op.push(c);
            self.pos += 1;
        }
        let pattern = self.param(|c| c != '/', true)?;
        if self.run(|c, _| c == '/').is_empty() {
            return Err(SubstError::BadSubstitution);
        }
        let mut args = vec![pattern];
        if self.peek() != Some('}') {
            args.push(self.param(|c| c != '}', true)?);
        }
        self.close()?;
        Ok(Expr { name, op, args })
    }
}

impl Template {
    /// Parses `text`.
    ///
    /// # Errors
    /// [`SubstError`] as upstream's parser gives it (all but
    /// [`SubstError::NegativeLength`], which only [`Template::eval`] gives).
    pub fn parse(text: &str) -> Result<Template, SubstError> {
        Self::parse_at(text).map_err(|(e, _)| e)
    }

    /// As [`Template::parse`], with the error the offset (in characters) of the
    /// top-level `${` whose expression does not parse.
    pub fn parse_at(text: &str) -> Result<Template, (SubstError, usize)> {
        let mut p = Parser {
            chars: text.chars().collect(),
            pos: 0,
            depth: 0,
            failed_at: 0,
        };
        match p.top() {
            Ok(parts) => Ok(Template { parts }),
            Err(e) => Err((e, p.failed_at)),
        }
    }

    /// Whether the template has an expression (`${...}`) anywhere.
    pub fn has_expressions(&self) -> bool {
        self.parts.iter().any(|p| matches!(p, Part::Expr(_)))
    }

    /// Every variable the template reads, in order of first use, nested ones included
    /// (`${a=${b}}` reads `a` and `b`).
    pub fn variables(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.collect(&mut out);
        out
    }

    fn collect(&self, out: &mut Vec<String>) {
        for part in &self.parts {
            if let Part::Expr(e) = part {
                if !out.contains(&e.name) {
                    out.push(e.name.clone());
                }
                for arg in &e.args {
                    arg.collect(out);
                }
            }
        }
    }

    /// Variables taken a substring of with a negative length written as text
    /// (`${V:10:-1}`, nested ones included): whether upstream's `toSubstr` panics there
    /// depends on the value's length (`s[pos:pos+length]` runs when `pos+length` is below
    /// it), so a caller that does not know the value cannot know the result.
    pub fn negative_substring_variables(&self) -> Vec<String> {
        let mut out = Vec::new();
        for part in &self.parts {
            if let Part::Expr(e) = part {
                let negative = e.op == ":"
                    && e.args.get(1).is_some_and(|len| match len.parts.as_slice() {
                        [Part::Text(t)] => t.parse::<i64>().is_ok_and(|l| l < 0),
                        _ => false,
                    });
                if negative && !out.contains(&e.name) {
                    out.push(e.name.clone());
                }
                for arg in &e.args {
                    for v in arg.negative_substring_variables() {
                        if !out.contains(&v) {
                            out.push(v);
                        }
                    }
                }
            }
        }
        out
    }

    /// Variables whose expression has a default value (`${V:-d}`, `${V=d}` ...).
    pub fn defaulted_variables(&self) -> Vec<String> {
        let mut out = Vec::new();
        for part in &self.parts {
            if let Part::Expr(e) = part {
                if matches!(e.op.as_str(), "=" | ":=" | ":-" | ":?" | ":+")
                    && !out.contains(&e.name)
                {
                    out.push(e.name.clone());
                }
                for arg in &e.args {
                    for v in arg.defaulted_variables() {
                        if !out.contains(&v) {
                            out.push(v);
                        }
                    }
                }
            }
        }
        out
    }

    /// The template with every expression filled from `lookup` (the variable's value;
    /// upstream treats an unknown and an empty variable alike, as `""`, unless the
    /// caller's lookup says otherwise, as Vela's compiler does by giving back `${NAME}`).
    ///
    /// # Errors
    /// [`SubstError::NegativeLength`] for a substring with a negative length.
    pub fn eval(&self, lookup: &mut dyn FnMut(&str) -> String) -> Result<String, SubstError> {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Expr(e) => {
                    let mut args = Vec::with_capacity(e.args.len());
                    for a in &e.args {
                        args.push(a.eval(lookup)?);
                    }
                    let value = lookup(&e.name);
                    out.push_str(&apply(&e.op, value, &args)?);
                }
            }
            if out.len() > MAX_OUTPUT {
                return Err(SubstError::TooLarge);
            }
        }
        Ok(out)
    }
}

/// Parses and evaluates `text` in one go; see [`Template`].
///
/// # Errors
/// As [`Template::parse`] and [`Template::eval`].
pub fn eval(text: &str, lookup: &mut dyn FnMut(&str) -> String) -> Result<String, SubstError> {
    Template::parse(text)?.eval(lookup)
}

fn apply(op: &str, value: String, args: &[String]) -> Result<String, SubstError> {
    let arg = |i: usize| args.get(i).map(String::as_str);
    Ok(match op {
        "#" if args.is_empty() => value.len().to_string(),
        "," => first_char(&value, char::to_lowercase),
        ",," => map_chars(&value, char::to_lowercase),
        "^" => first_char(&value, char::to_uppercase),
        "^^" => map_chars(&value, char::to_uppercase),
        "#" => trim_prefix(&value, arg(0).unwrap_or(""), false)?,
        "##" => trim_prefix(&value, arg(0).unwrap_or(""), true)?,
        "%" | "%%" => {
            let pattern: String = arg(0).unwrap_or("").chars().rev().collect();
            let reversed: String = value.chars().rev().collect();
            trim_prefix(&reversed, &pattern, op == "%%")?
                .chars()
                .rev()
                .collect()
        }
        ":" => substring(&value, args)?,
        "/" | "//" => match (arg(0), arg(1)) {
            (Some(from), to) => {
                let count = if op == "/" { 1 } else { usize::MAX };
                replace_n(&value, from, to.unwrap_or(""), count)
            }
            (None, _) => value,
        },
        "/#" => match (args.len(), arg(0), arg(1)) {
            (2, Some(from), Some(to)) if value.starts_with(from) => replace_n(&value, from, to, 1),
            _ => value,
        },
        "/%" => match (args.len(), arg(0), arg(1)) {
            (2, Some(from), Some(to)) if value.ends_with(from) => {
                format!("{}{to}", &value[..value.len() - from.len()])
            }
            _ => value,
        },
        // The defaults, and any operator upstream maps to its default function
        // (`,^`, `^,`), which gives the default only when the value is empty.
        _ => {
            if value.is_empty() && !args.is_empty() {
                args.concat()
            } else {
                value
            }
        }
    })
}

/// Go's `strings.Replace(s, from, to, n)`: an empty `from` matches before every
/// character and at the end.
fn replace_n(s: &str, from: &str, to: &str, n: usize) -> String {
    if from.is_empty() {
        let mut out = String::new();
        let mut done = 0;
        for c in s.chars() {
            if done < n {
                out.push_str(to);
                done += 1;
            }
            out.push(c);
        }
        if done < n {
            out.push_str(to);
        }
        return out;
    }
    s.replacen(from, to, n)
}

/// One character mapped as Go's `unicode.ToUpper`/`ToLower` does: a mapping to more
/// than one character (`ß` → `SS`) leaves it unchanged.
fn map_char<I: Iterator<Item = char>>(c: char, f: fn(char) -> I) -> char {
    let mut mapped = f(c);
    match (mapped.next(), mapped.next()) {
        (Some(m), None) => m,
        _ => c,
    }
}

fn first_char<I: Iterator<Item = char>>(s: &str, f: fn(char) -> I) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => {
            let mut out = String::with_capacity(s.len());
            out.push(map_char(c, f));
            out.push_str(chars.as_str());
            out
        }
        None => String::new(),
    }
}

fn map_chars<I: Iterator<Item = char>>(s: &str, f: fn(char) -> I) -> String {
    s.chars().map(|c| map_char(c, f)).collect()
}

/// `${V:off[:len]}` in bytes, as upstream: an offset that is not a number leaves the
/// value as it is; a negative offset counts from the end (at least 0); a length past
/// the end takes the rest.
fn substring(value: &str, args: &[String]) -> Result<String, SubstError> {
    let bytes = value.as_bytes();
    let len = i128::try_from(bytes.len()).unwrap_or(i128::MAX);
    let Some(Ok(offset)) = args.first().map(|a| a.parse::<i64>()) else {
        return Ok(value.to_owned());
    };
    let mut pos = i128::from(offset);
    if pos < 0 {
        pos = (len + pos).max(0);
    }
    let from = |p: i128| -> String {
        usize::try_from(p)
            .ok()
            .and_then(|p| bytes.get(p..))
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default()
    };
    let Some(length) = args.get(1) else {
        return Ok(if pos < len { from(pos) } else { String::new() });
    };
    let Ok(length) = length.parse::<i64>() else {
        return Ok(value.to_owned());
    };
    let end = pos + i128::from(length);
    if end >= len {
        return Ok(if pos < len { from(pos) } else { String::new() });
    }
    if end < pos {
        return Err(SubstError::NegativeLength);
    }
    let (Ok(start), Ok(end)) = (usize::try_from(pos), usize::try_from(end)) else {
        return Err(SubstError::NegativeLength);
    };
    Ok(bytes
        .get(start..end)
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default())
}

/// The value with the shortest (or longest) non-empty prefix that matches `pattern`
/// removed; unchanged when none matches or the pattern is malformed.
fn trim_prefix(value: &str, pattern: &str, longest: bool) -> Result<String, SubstError> {
    let Some(glob) = Glob::parse(pattern) else {
        return Ok(value.to_owned());
    };
    let chars: Vec<char> = value.chars().collect();
    if chars.len() > MAX_TRIM {
        return Err(SubstError::TrimTooLong);
    }
    let mut lengths: Box<dyn Iterator<Item = usize>> = if longest {
        Box::new((1..=chars.len()).rev())
    } else {
        Box::new(1..=chars.len())
    };
    Ok(match lengths.find(|&n| glob.matches(&chars[..n])) {
        Some(n) => chars[n..].iter().collect(),
        None => value.to_owned(),
    })
}

/// A glob as upstream's `path.Match` reads it, except that `*` also matches `/`:
/// `*`, `?`, `[...]` (ranges, `^` negates), `\` escapes.
#[derive(Debug)]
enum Token {
    Star,
    Any,
    Literal(char),
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

struct Glob(Vec<Token>);

impl Glob {
    /// `None` for a malformed pattern (an unclosed or empty class, a trailing `\`).
    fn parse(pattern: &str) -> Option<Glob> {
        let mut tokens = Vec::new();
        let mut chars = pattern.chars().peekable();
        while let Some(c) = chars.next() {
            tokens.push(match c {
                '*' => Token::Star,
                '?' => Token::Any,
                '\\' => Token::Literal(chars.next()?),
                '[' => {
                    let negated = chars.next_if_eq(&'^').is_some();
                    let mut ranges = Vec::new();
                    loop {
                        if !ranges.is_empty() && chars.next_if_eq(&']').is_some() {
                            break;
                        }
                        let lo = class_char(&mut chars)?;
                        let hi = if chars.next_if_eq(&'-').is_some() {
                            class_char(&mut chars)?
                        } else {
                            lo
                        };
                        ranges.push((lo, hi));
                    }
                    Token::Class { negated, ranges }
                }
                c => Token::Literal(c),
            });
        }
        Some(Glob(tokens))
    }

    fn matches(&self, name: &[char]) -> bool {
        matches_at(&self.0, name)
    }
}

fn class_char(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Option<char> {
    match chars.next()? {
        '-' | ']' => None,
        '\\' => chars.next(),
        c => Some(c),
    }
}

/// Whether `tokens` match all of `name`: one pass, going back only to the last `*`
/// (each `*` matches any run, so an earlier one never needs to be revisited), so
/// `O(tokens × name)` at worst.
fn matches_at(tokens: &[Token], name: &[char]) -> bool {
    let (mut t, mut n) = (0, 0);
    // The token after the last `*`, and where in `name` that star's run ends for now.
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        let step = match tokens.get(t) {
            Some(Token::Star) => {
                star = Some((t + 1, n));
                t += 1;
                continue;
            }
            Some(Token::Any) => true,
            Some(Token::Literal(l)) => *l == name[n],
            Some(Token::Class { negated, ranges }) => {
                ranges
                    .iter()
                    .any(|&(lo, hi)| lo <= name[n] && name[n] <= hi)
                    != *negated
            }
            None => false,
        };
        if step {
            t += 1;
            n += 1;
        } else if let Some((after, run_end)) = star {
            // Let the last star take one more character and retry from there.
            t = after;
            n = run_end + 1;
            star = Some((after, run_end + 1));
        } else {
            return false;
        }
    }
    tokens[t..].iter().all(|tok| matches!(tok, Token::Star))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn run(params: &[(&str, &str)], input: &str) -> Result<String, SubstError> {
        let params: HashMap<&str, &str> = params.iter().copied().collect();
        eval(input, &mut |name| {
            params
                .get(name)
                .map(|v| (*v).to_owned())
                .unwrap_or_default()
        })
    }

    /// drone/envsubst `eval_test.go` `TestExpand` (its cases from tldp.org's
    /// parameter-substitution page), as (params, input, output).
    #[test]
    fn upstream_expand_table() {
        let z = "abcABC123ABCabc";
        let path = "/home/bozo/ideas/thoughts.for.today";
        type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, &'a str);
        let cases: &[Case<'_>] = &[
            (&[], "abcdEFGH28ij", "abcdEFGH28ij"),
            (&[("var01", "abcdEFGH28ij")], "${#var01}", "12"),
            (&[("var01", "abcdEFGH28ij")], "${var01^}", "AbcdEFGH28ij"),
            (&[("var01", "abcdEFGH28ij")], "${var01^^}", "ABCDEFGH28IJ"),
            (&[("var01", "ABCDEFGH28IJ")], "${var01,}", "aBCDEFGH28IJ"),
            (&[("var01", "ABCDEFGH28IJ")], "${var01,,}", "abcdefgh28ij"),
            (
                &[("path_name", path)],
                "${path_name:11}",
                "ideas/thoughts.for.today",
            ),
            (&[("path_name", path)], "${path_name:11:5}", "ideas"),
            (&[("var", "abc")], "${var=xyz}", "abc"),
            (&[], "${var=xyz}", "xyz"),
            (
                &[("default_var", "foo")],
                "something ${var=${default_var}}",
                "something foo",
            ),
            (
                &[("default_var", "foo1")],
                "foo: ${var=${default_var}-suffix}",
                "foo: foo1-suffix",
            ),
            (
                &[("default_var", "foo1")],
                "foo: ${var=prefix${default_var}-suffix}",
                "foo: prefixfoo1-suffix",
            ),
            (&[], "${var:=xyz}", "xyz"),
            (&[("stringZ", z)], "${stringZ/%abc/XYZ}", "abcABC123ABCXYZ"),
            (&[("stringZ", z)], "${stringZ/#abc/XYZ}", "XYZABC123ABCabc"),
            (&[("stringZ", z)], "${stringZ//abc/xyz}", "xyzABC123ABCxyz"),
            (&[("stringZ", z)], "${stringZ/abc/xyz}", "xyzABC123ABCabc"),
            (
                &[("filename", "bash.string.txt")],
                "${filename#*.}",
                "string.txt",
            ),
            (&[("filename", "path/to/file")], "${filename#*/}", "to/file"),
            (
                &[("filename", "/path/to/file")],
                "${filename#*/}",
                "path/to/file",
            ),
            (&[("filename", "bash.string.txt")], "${filename##*.}", "txt"),
            (&[("filename", "path/to/file")], "${filename##*/}", "file"),
            (&[("filename", "/path/to/file")], "${filename##*/}", "file"),
            (
                &[("filename", "bash.string.txt")],
                "${filename%.*}",
                "bash.string",
            ),
            (
                &[("filename", "bash.string.txt")],
                "${filename%%.*}",
                "bash",
            ),
            (
                &[("var01", "abcdEFGH28ij")],
                "${var=${var01^^}}",
                "ABCDEFGH28IJ",
            ),
            (&[("var01", "abcdEFGH28ij")], "$${var01}", "${var01}"),
            (
                &[("var01", "abcdEFGH28ij")],
                "some text ${var01}$${var$${var01}$var01${var01}",
                "some text abcdEFGH28ij${var${var01}$var01abcdEFGH28ij",
            ),
            (
                &[("default_var", "foo")],
                "something $${var=${default_var}}",
                "something ${var=foo}",
            ),
            (&[("stringZ", "foo/bar")], r"${stringZ/\//-}", "foo-bar"),
            (
                &[("stringZ", "foo/bar/baz")],
                r"${stringZ//\//-}",
                "foo-bar-baz",
            ),
            (
                &[("default_var", "foo")],
                r"\\something ${var=${default_var}}",
                r"\\something foo",
            ),
            (&[("stringZ", "foo.bar")], "${stringZ/./}", "foobar"),
        ];
        for (params, input, output) in cases {
            assert_eq!(run(params, input).as_deref(), Ok(*output), "{input}");
        }
    }

    /// drone/envsubst `funcs_test.go`, each function through its syntax.
    #[test]
    fn upstream_funcs_table() {
        let hw = [("v", "Hello World")];
        assert_eq!(run(&hw, "${#v}").as_deref(), Ok("11"));
        assert_eq!(run(&hw, "${v,,}").as_deref(), Ok("hello world"));
        assert_eq!(
            run(&[("v", "HELLO WORLD")], "${v,}").as_deref(),
            Ok("hELLO WORLD")
        );
        assert_eq!(run(&hw, "${v^^}").as_deref(), Ok("HELLO WORLD"));
        assert_eq!(
            run(&[("v", "hello world")], "${v^}").as_deref(),
            Ok("Hello world")
        );
        // The case functions on an empty value.
        assert_eq!(run(&[], "${v,}${v^}").as_deref(), Ok(""));
        // Defaults: the value when set, else the arguments joined.
        assert_eq!(run(&hw, "${v:-Hola Mundo}").as_deref(), Ok("Hello World"));
        assert_eq!(run(&[], "${v:-Hola Mundo}").as_deref(), Ok("Hola Mundo"));
        assert_eq!(
            run(
                &[("a", "-Bonjour le monde"), ("b", "-Halló heimur")],
                "${v:-Hola Mundo${a}${b}}"
            )
            .as_deref(),
            Ok("Hola Mundo-Bonjour le monde-Halló heimur")
        );
        // `${v:-3}` is the default form, so a negative offset comes through a variable.
        let digits = [("v", "123456789123456789"), ("m3", "-3"), ("m300", "-300")];
        for (input, output) in [
            ("${v:0:8}", "12345678"),
            ("${v:1:8}", "23456789"),
            ("${v:9}", "123456789"),
            ("${v:9:50}", "123456789"),
            ("${v:${m3}:2}", "78"),
            ("${v:${m300}:3}", "123"),
        ] {
            assert_eq!(run(&digits, input).as_deref(), Ok(output), "{input}");
        }
        assert_eq!(run(&[("v", "12345678")], "${v:9:1}").as_deref(), Ok(""));
    }

    /// drone/envsubst `parse/parse_test.go`: the forms its parser accepts, and their
    /// nesting (the values are ours).
    #[test]
    fn upstream_parse_forms() {
        let env = [
            ("string", "abc/def"),
            ("position", "1"),
            ("length", "2"),
            ("stringy", "b"),
            ("stringz", "X"),
            ("var", "v"),
        ];
        for (input, output) in [
            ("$$string", "$string"),
            ("${string:position}", "abc/def"),
            ("${string:${position}}", "bc/def"),
            ("${string:${position}:${length}}", "bc"),
            ("${string#$%:*{}", "abc/def"),
            ("${string//${stringy}/${stringz}}", "aXc/def"),
            ("${string=prefix${var} suffix}", "abc/def"),
            ("${nope=prefix-${var}-suffix}", "prefix-v-suffix"),
            ("${nope:?d}${nope:+e}", "de"),
            ("${string/#abc/x}${string/%def/y}", "x/defabc/y"),
            ("${string/#zz/x}${string/#abc/}", "abc/defabc/def"),
            ("${string/c\\/d/-}", "ab-ef"),
            ("${string,^}", "abc/def"),
        ] {
            assert_eq!(run(&env, input).as_deref(), Ok(output), "{input}");
        }
    }

    #[test]
    fn errors_are_upstreams() {
        use SubstError::*;
        for (input, error) in [
            ("${", VariableName),
            ("${}", VariableName),
            ("${-a}", VariableName),
            ("${a", MissingClosingBrace),
            ("${a-b}", MissingClosingBrace),
            ("${a b}", MissingClosingBrace),
            ("${#}", BadSubstitution),
            ("${a:1", BadSubstitution),
            ("${a:1${b}}", BadSubstitution),
            ("${a/x}", BadSubstitution),
            ("${a^^^}", BadSubstitution),
            ("${a:}", FuncSubstitution),
            ("${a#}", FuncSubstitution),
            ("${a=b", FuncSubstitution),
            ("${a:0:-1}", NegativeLength),
        ] {
            let params = [("a", "abc")];
            assert_eq!(run(&params, input), Err(error), "{input}");
        }
        assert_eq!(BadSubstitution.to_string(), "bad substitution");
        assert_eq!(MissingClosingBrace.to_string(), "missing closing brace");
    }

    #[test]
    fn plain_dollar_is_text_and_variables_are_listed() {
        assert_eq!(run(&[("V", "x")], "$V ${V} $").as_deref(), Ok("$V x $"));
        let t = Template::parse("golang:${GO=${DEF:-1}}-${#N}$${X}").expect("parses");
        assert_eq!(t.variables(), ["GO", "DEF", "N"]);
        assert_eq!(t.defaulted_variables(), ["GO", "DEF"]);
        assert!(t.has_expressions());
        assert!(!Template::parse("a$${b}").expect("parses").has_expressions());
        // Non-numeric offsets leave the value; huge ones do not overflow.
        assert_eq!(run(&[("a", "abc")], "${a:x}").as_deref(), Ok("abc"));
        assert_eq!(run(&[("a", "abc")], "${a:1x}").as_deref(), Ok("abc"));
        assert_eq!(
            run(
                &[("a", "abc")],
                "${a:9223372036854775807:9223372036854775807}"
            )
            .as_deref(),
            Ok("")
        );
        assert_eq!(
            run(&[("a", "abc")], "${a:-9223372036854775808}").as_deref(),
            Ok("abc")
        );
        // Substrings cut bytes; a cut inside a character does not panic.
        assert!(run(&[("a", "ü")], "${a:1}").is_ok());
    }

    #[test]
    fn hostile_input_is_bounded() {
        let deep = "${a=".repeat(100_000) + &"}".repeat(100_000);
        assert_eq!(run(&[], &deep), Err(SubstError::TooDeep));
        let ok = "${a=".repeat(MAX_DEPTH) + "x" + &"}".repeat(MAX_DEPTH);
        assert_eq!(run(&[], &ok).as_deref(), Ok("x"));
        let big = "x".repeat(MAX_OUTPUT / 4);
        assert_eq!(
            run(&[("v", &big)], "${v}${v}${v}${v}${v}"),
            Err(SubstError::TooLarge)
        );
        // Many stars against a long value: no exponential backtracking.
        let value = "a".repeat(4000);
        let pattern = "*a".repeat(30) + "b";
        let started = std::time::Instant::now();
        let input = format!("${{v##{pattern}}}");
        assert_eq!(run(&[("v", &value)], &input).as_deref(), Ok(value.as_str()));
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
    }

    #[test]
    fn globs() {
        let cases = [
            ("*", "anything/at/all", true),
            ("a*c", "abbbc", true),
            ("a*c", "abbbcd", false),
            ("a?c", "abc", true),
            ("[a-c]x", "bx", true),
            ("[^a-c]x", "bx", false),
            ("\\*", "*", true),
            ("*.", "a.b.", true),
            ("a*b*c", "aXbYbZc", true),
        ];
        for (pattern, name, want) in cases {
            let glob = Glob::parse(pattern).expect("parses");
            let name: Vec<char> = name.chars().collect();
            assert_eq!(glob.matches(&name), want, "{pattern} {name:?}");
        }
        for bad in ["[", "[]", "[a-", "\\"] {
            assert!(Glob::parse(bad).is_none(), "{bad}");
        }
    }
}
