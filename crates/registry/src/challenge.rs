//! `WWW-Authenticate` parsing (RFC 7235 §4.1 and §2.1), and nothing else.
//!
//! ```text
//! WWW-Authenticate = 1#challenge
//! challenge        = auth-scheme [ 1*SP ( token68 / #auth-param ) ]
//! auth-param       = token BWS "=" BWS ( token / quoted-string )
//! ```
//!
//! Commas separate both challenges and the parameters of one challenge, so a name
//! followed by `=` continues the current challenge and anything else starts the next.
//! Two leniencies, both seen in the wild: an unquoted value may hold any visible
//! character but `,` and `"` (bare URLs such as `realm=https://auth/token`), and the
//! values of several `WWW-Authenticate` fields are simply concatenated, as RFC 7230
//! §3.2.2 allows. Scheme and parameter names are case-insensitive and stored in lower
//! case; values keep their case.
//!
//! Invariant: pure; no IO, no allocation beyond the result.

use std::fmt;

/// One challenge: a scheme and either a token68 or parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Challenge {
    /// The auth-scheme in lower case, e.g. `bearer`, `basic`.
    pub scheme: String,
    /// The token68 form (`Negotiate YII=`), when the challenge used it.
    pub token68: Option<String>,
    /// The auth-params in order, names in lower case, values unquoted.
    pub params: Vec<(String, String)>,
}

impl Challenge {
    /// The first parameter called `name` (case-insensitive).
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Whether the scheme is `scheme` (case-insensitive).
    pub fn is(&self, scheme: &str) -> bool {
        self.scheme.eq_ignore_ascii_case(scheme)
    }
}

/// A header that does not follow the grammar, with the byte offset where it broke.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParseError {
    /// Byte offset into the header value.
    pub position: usize,
    /// What was expected there.
    pub reason: &'static str,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.reason, self.position)
    }
}

/// Parses one `WWW-Authenticate` field value into its challenges, in order.
///
/// # Errors
/// [`ParseError`] when the value breaks the grammar (an unterminated quoted string, a
/// parameter without a name, a scheme glued to a quote, …).
pub(crate) fn parse(value: &[u8]) -> Result<Vec<Challenge>, ParseError> {
    Parser { s: value, pos: 0 }.challenges()
}

/// Parses every `WWW-Authenticate` field of a response. Challenges from fields that
/// parse are kept even when another field does not; the first error is returned beside
/// them.
pub(crate) fn parse_fields<'a>(
    values: impl IntoIterator<Item = &'a [u8]>,
) -> (Vec<Challenge>, Option<ParseError>) {
    let mut all = Vec::new();
    let mut first_error = None;
    for value in values {
        match parse(value) {
            Ok(mut challenges) => all.append(&mut challenges),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    (all, first_error)
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn is_token68_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~+/".contains(&b)
}

fn is_ws(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// A character allowed in an unquoted value: a token, leniently widened to any visible
/// character (and obs-text) except the list separator and the quote.
fn is_bare_value_char(b: u8) -> bool {
    (b > 0x20 && b != 0x7f && b != b',' && b != b'"') || b >= 0x80
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn peek_at(&self, at: usize) -> Option<u8> {
        self.s.get(at).copied()
    }

    fn skip_ws(&mut self) -> usize {
        let start = self.pos;
        while self.peek().is_some_and(is_ws) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn skip_ws_at(&self, mut at: usize) -> usize {
        while self.peek_at(at).is_some_and(is_ws) {
            at += 1;
        }
        at
    }

    /// Skips whitespace and empty list elements (`, ,`), as the `#rule` allows.
    fn skip_separators(&mut self) {
        while self.peek().is_some_and(|b| is_ws(b) || b == b',') {
            self.pos += 1;
        }
    }

    fn token(&mut self) -> &[u8] {
        let start = self.pos;
        while self.peek().is_some_and(is_tchar) {
            self.pos += 1;
        }
        &self.s[start..self.pos]
    }

    fn error<T>(&self, reason: &'static str) -> Result<T, ParseError> {
        Err(ParseError {
            position: self.pos,
            reason,
        })
    }

    fn challenges(mut self) -> Result<Vec<Challenge>, ParseError> {
        let mut out = Vec::new();
        loop {
            self.skip_separators();
            if self.peek().is_none() {
                return Ok(out);
            }
            out.push(self.challenge()?);
        }
    }

    /// Whether the parameter list goes on at `at`: a token, optional whitespace, `=`,
    /// and then something other than another `=`, a comma or the end (which would make
    /// it a token68 with padding, or a new scheme).
    fn param_starts_at(&self, at: usize) -> bool {
        let mut i = at;
        while self.peek_at(i).is_some_and(is_tchar) {
            i += 1;
        }
        if i == at {
            return false;
        }
        i = self.skip_ws_at(i);
        if self.peek_at(i) != Some(b'=') {
            return false;
        }
        i = self.skip_ws_at(i + 1);
        matches!(self.peek_at(i), Some(b) if b != b'=' && b != b',')
    }

    fn challenge(&mut self) -> Result<Challenge, ParseError> {
        let scheme = self.token();
        if scheme.is_empty() {
            return self.error("expected an auth-scheme");
        }
        let mut challenge = Challenge {
            scheme: String::from_utf8_lossy(scheme).to_ascii_lowercase(),
            token68: None,
            params: Vec::new(),
        };
        let spaces = self.skip_ws();
        match self.peek() {
            None | Some(b',') => return Ok(challenge),
            Some(_) if spaces == 0 => return self.error("expected a space after the auth-scheme"),
            Some(_) => {}
        }
        if !self.param_starts_at(self.pos) {
            challenge.token68 = Some(self.token68()?);
            return Ok(challenge);
        }
        loop {
            let (name, value) = self.param()?;
            challenge.params.push((name, value));
            self.skip_ws();
            match self.peek() {
                None => return Ok(challenge),
                Some(b',') => {}
                Some(_) => return self.error("expected `,` after a parameter"),
            }
            // Look past the comma(s): another parameter, or the next challenge.
            let mut at = self.pos;
            while self.peek_at(at).is_some_and(|b| is_ws(b) || b == b',') {
                at += 1;
            }
            if self.param_starts_at(at) {
                self.pos = at;
            } else {
                return Ok(challenge);
            }
        }
    }

    fn token68(&mut self) -> Result<String, ParseError> {
        let start = self.pos;
        while self.peek().is_some_and(is_token68_char) {
            self.pos += 1;
        }
        if self.pos == start {
            return self.error("expected a token68 or an auth-param");
        }
        while self.peek() == Some(b'=') {
            self.pos += 1;
        }
        let value = String::from_utf8_lossy(&self.s[start..self.pos]).into_owned();
        self.skip_ws();
        match self.peek() {
            None | Some(b',') => Ok(value),
            Some(_) => self.error("expected `,` after a token68"),
        }
    }

    fn param(&mut self) -> Result<(String, String), ParseError> {
        let name = self.token();
        if name.is_empty() {
            return self.error("expected a parameter name");
        }
        let name = String::from_utf8_lossy(name).to_ascii_lowercase();
        self.skip_ws();
        if self.peek() != Some(b'=') {
            return self.error("expected `=` after a parameter name");
        }
        self.pos += 1;
        self.skip_ws();
        let value = match self.peek() {
            Some(b'"') => self.quoted_string()?,
            Some(b) if is_bare_value_char(b) => {
                let start = self.pos;
                while self.peek().is_some_and(is_bare_value_char) {
                    self.pos += 1;
                }
                String::from_utf8_lossy(&self.s[start..self.pos]).into_owned()
            }
            _ => return self.error("expected a parameter value"),
        };
        Ok((name, value))
    }

    fn quoted_string(&mut self) -> Result<String, ParseError> {
        let open = self.pos;
        self.pos += 1;
        let mut bytes = Vec::new();
        loop {
            match self.peek() {
                None => {
                    self.pos = open;
                    return self.error("unterminated quoted-string");
                }
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(String::from_utf8_lossy(&bytes).into_owned());
                }
                Some(b'\\') => {
                    // quoted-pair = "\" ( HTAB / SP / VCHAR / obs-text )
                    match self.peek_at(self.pos + 1) {
                        Some(b) => {
                            bytes.push(b);
                            self.pos += 2;
                        }
                        None => {
                            self.pos = open;
                            return self.error("unterminated quoted-string");
                        }
                    }
                }
                Some(b) => {
                    bytes.push(b);
                    self.pos += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Vec<Challenge> {
        match parse(s.as_bytes()) {
            Ok(c) => c,
            Err(e) => panic!("{s:?}: {e}"),
        }
    }

    fn ch(scheme: &str, params: &[(&str, &str)]) -> Challenge {
        Challenge {
            scheme: scheme.to_string(),
            token68: None,
            params: params
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
        }
    }

    fn t68(scheme: &str, token: &str) -> Challenge {
        Challenge {
            scheme: scheme.to_string(),
            token68: Some(token.to_string()),
            params: Vec::new(),
        }
    }

    #[test]
    fn rfc7235_section_4_1_example_has_two_challenges() {
        // RFC 7235 §4.1: one field, two challenges, an escaped quote in a value.
        let got =
            p(r#"Newauth realm="apps", type=1, title="Login to \"apps\"", Basic realm="simple""#);
        assert_eq!(
            got,
            vec![
                ch(
                    "newauth",
                    &[
                        ("realm", "apps"),
                        ("type", "1"),
                        ("title", r#"Login to "apps""#)
                    ]
                ),
                ch("basic", &[("realm", "simple")]),
            ]
        );
    }

    #[test]
    fn rfc7617_basic_with_charset() {
        // RFC 7617 §2.1 and §2.1 (charset) examples.
        assert_eq!(
            p(r#"Basic realm="WallyWorld""#),
            vec![ch("basic", &[("realm", "WallyWorld")])]
        );
        assert_eq!(
            p(r#"Basic realm="foo", charset="UTF-8""#),
            vec![ch("basic", &[("realm", "foo"), ("charset", "UTF-8")])]
        );
    }

    #[test]
    fn token_spec_bearer_challenge_with_comma_inside_scope() {
        // distribution token-auth spec, "How to authenticate": the scope value holds a comma.
        let got = p(
            r#"Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:samalba/my-app:pull,push""#,
        );
        assert_eq!(
            got,
            vec![ch(
                "bearer",
                &[
                    ("realm", "https://auth.docker.io/token"),
                    ("service", "registry.docker.io"),
                    ("scope", "repository:samalba/my-app:pull,push"),
                ]
            )]
        );
    }

    #[test]
    fn insufficient_scope_error_param() {
        // distribution token-auth spec, a 401 on a resource with an `error` parameter.
        let got = p(
            r#"Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:samalba/my-app:pull",error="insufficient_scope""#,
        );
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].param("error"), Some("insufficient_scope"));
        assert_eq!(got[0].param("ERROR"), Some("insufficient_scope"));
    }

    #[test]
    fn scheme_and_param_names_are_case_insensitive() {
        let got = p(r#"BEARER Realm="https://a/token",SERVICE=reg"#);
        assert!(got[0].is("Bearer"));
        assert_eq!(got[0].scheme, "bearer");
        assert_eq!(got[0].param("realm"), Some("https://a/token"));
        assert_eq!(got[0].param("service"), Some("reg"));
    }

    #[test]
    fn bare_values_including_urls() {
        assert_eq!(
            p("Basic realm=simple"),
            vec![ch("basic", &[("realm", "simple")])]
        );
        assert_eq!(
            p("Bearer realm=https://auth.example/token?x=1,service=reg.example"),
            vec![ch(
                "bearer",
                &[
                    ("realm", "https://auth.example/token?x=1"),
                    ("service", "reg.example")
                ]
            )]
        );
    }

    #[test]
    fn whitespace_around_equals_and_commas() {
        assert_eq!(
            p("Bearer realm = \"r\" ,\tservice= \"s\" , Basic   realm=\"b\""),
            vec![
                ch("bearer", &[("realm", "r"), ("service", "s")]),
                ch("basic", &[("realm", "b")]),
            ]
        );
    }

    #[test]
    fn empty_list_elements_are_skipped() {
        assert_eq!(
            p(r#" , Basic realm="a",, ,Bearer realm="b", "#),
            vec![
                ch("basic", &[("realm", "a")]),
                ch("bearer", &[("realm", "b")])
            ]
        );
    }

    #[test]
    fn scheme_without_parameters() {
        assert_eq!(
            p(r#"Negotiate, Basic realm="x""#),
            vec![ch("negotiate", &[]), ch("basic", &[("realm", "x")])]
        );
        assert_eq!(p("Negotiate"), vec![ch("negotiate", &[])]);
    }

    #[test]
    fn token68_with_padding_then_another_challenge() {
        assert_eq!(p("Negotiate abc123=="), vec![t68("negotiate", "abc123==")]);
        assert_eq!(
            p(r#"Negotiate a/b+c=, Basic realm="x""#),
            vec![t68("negotiate", "a/b+c="), ch("basic", &[("realm", "x")])]
        );
        // A token68 without padding is told from a parameter by the missing `=`.
        assert_eq!(p("Custom opaque"), vec![t68("custom", "opaque")]);
    }

    #[test]
    fn empty_quoted_value_and_escapes() {
        assert_eq!(
            p(r#"Basic realm="", x="a\\b""#),
            vec![ch("basic", &[("realm", ""), ("x", r"a\b")])]
        );
    }

    #[test]
    fn duplicate_parameter_keeps_the_first_for_lookup() {
        let got = p(r#"Bearer realm="one", realm="two""#);
        assert_eq!(got[0].param("realm"), Some("one"));
        assert_eq!(got[0].params.len(), 2);
    }

    #[test]
    fn malformed_values_are_errors_with_position() {
        let e = parse(br#"Bearer realm="unterminated"#).unwrap_err();
        assert_eq!(e.reason, "unterminated quoted-string");
        assert_eq!(e.position, 13);
        assert!(parse(br#"Bearer ="x""#).is_err());
        assert!(parse(br#"Bearer realm="a" service="b""#).is_err());
        assert!(parse(br#"Basic"realm""#).is_err());
        assert!(parse(br#"Bearer realm="a",="b""#).is_err());
        // A lone `name=` is, by the grammar, a token68 with padding.
        assert_eq!(
            parse(b"Bearer realm=").unwrap(),
            vec![t68("bearer", "realm=")]
        );
        assert_eq!(parse(b"").unwrap(), Vec::new());
    }

    #[test]
    fn several_fields_are_concatenated_and_errors_do_not_hide_good_fields() {
        let (got, err) = parse_fields([
            br#"Bearer realm="r",service="s""#.as_slice(),
            br#"Broken realm="unterminated"#.as_slice(),
            br#"Basic realm="b""#.as_slice(),
        ]);
        assert_eq!(
            got,
            vec![
                ch("bearer", &[("realm", "r"), ("service", "s")]),
                ch("basic", &[("realm", "b")])
            ]
        );
        assert!(err.is_some());
    }

    #[test]
    fn non_utf8_bytes_do_not_panic() {
        let got = parse(b"Basic realm=\"caf\xe9\"").unwrap();
        assert!(got[0].param("realm").is_some());
    }
}
