//! Shell-style patterns with the semantics of Go's `path/filepath.Match` on Unix, which
//! the kubelet uses to match one host label of a keyring key against one label of an
//! image's host.
//!
//! - `*` matches any run of characters other than `/`, `?` any one such character;
//! - `[…]` is a class of characters and ranges (`a-z`), negated by a leading `^`;
//! - `\` makes the next character literal.
//!
//! A malformed pattern (an unclosed `[`, an empty class, a trailing `\`, a class
//! starting with `-` or `]` where a character is due) never matches: Go reports
//! `ErrBadPattern`, which the kubelet treats as "no match".

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Star,
    AnyOne,
    Literal(char),
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

/// Whether `name` matches the whole of `pattern`.
pub(crate) fn matches(pattern: &str, name: &str) -> bool {
    let Some(tokens) = compile(pattern) else {
        return false;
    };
    let name: Vec<char> = name.chars().collect();
    // Greedy matching that backtracks to the last `*` only: every other token consumes
    // exactly one character, so this is complete and linear in practice.
    let (mut t, mut n) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match tokens.get(t) {
            Some(Token::Star) => {
                star = Some((t, n));
                t += 1;
                continue;
            }
            Some(token) if one(token, name[n]) => {
                t += 1;
                n += 1;
                continue;
            }
            _ => {}
        }
        match star {
            // `*` never swallows a separator.
            Some((st, sn)) if name[sn] != '/' => {
                star = Some((st, sn + 1));
                t = st + 1;
                n = sn + 1;
            }
            _ => return false,
        }
    }
    tokens[t..].iter().all(|tok| *tok == Token::Star)
}

fn one(token: &Token, c: char) -> bool {
    match token {
        Token::Star => false,
        Token::AnyOne => c != '/',
        Token::Literal(l) => *l == c,
        Token::Class { negated, ranges } => {
            let hit = ranges.iter().any(|(lo, hi)| *lo <= c && c <= *hi);
            hit != *negated
        }
    }
}

/// Parses `pattern`; `None` when Go would answer `ErrBadPattern`.
fn compile(pattern: &str) -> Option<Vec<Token>> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' => {
                tokens.push(Token::Star);
                i += 1;
            }
            '?' => {
                tokens.push(Token::AnyOne);
                i += 1;
            }
            '\\' => {
                let c = *chars.get(i + 1)?;
                tokens.push(Token::Literal(c));
                i += 2;
            }
            '[' => {
                i += 1;
                let negated = chars.get(i) == Some(&'^');
                if negated {
                    i += 1;
                }
                let mut ranges = Vec::new();
                loop {
                    if chars.get(i) == Some(&']') && !ranges.is_empty() {
                        i += 1;
                        break;
                    }
                    let (lo, next) = class_char(&chars, i)?;
                    i = next;
                    let mut hi = lo;
                    if chars.get(i) == Some(&'-') {
                        let (h, next) = class_char(&chars, i + 1)?;
                        hi = h;
                        i = next;
                    }
                    ranges.push((lo, hi));
                }
                tokens.push(Token::Class { negated, ranges });
            }
            c => {
                tokens.push(Token::Literal(c));
                i += 1;
            }
        }
    }
    Some(tokens)
}

/// One character of a class at `i`, with Go's rules: `-` and `]` are not allowed
/// there, `\` escapes, and the class must go on after it.
fn class_char(chars: &[char], mut i: usize) -> Option<(char, usize)> {
    let mut c = *chars.get(i)?;
    if c == '-' || c == ']' {
        return None;
    }
    if c == '\\' {
        i += 1;
        c = *chars.get(i)?;
    }
    i += 1;
    if i >= chars.len() {
        return None;
    }
    Some((c, i))
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn go_filepath_match_semantics() {
        // (pattern, name, matches): cases in the spirit of Go's own match tests.
        let cases = [
            ("abc", "abc", true),
            ("*", "abc", true),
            ("*c", "abc", true),
            ("a*", "a", true),
            ("a*", "abc", true),
            ("a*", "ab/c", false),
            ("a*/b", "abc/b", true),
            ("a*b*c*d*e*/f", "axbxcxdxe/f", true),
            ("a*b?c*x", "abxbbxdbxebxczzx", true),
            ("a*b?c*x", "abxbbxdbxebxczzy", false),
            ("ab[c]", "abc", true),
            ("ab[b-d]", "abc", true),
            ("ab[e-g]", "abc", false),
            ("ab[^c]", "abc", false),
            ("ab[^b-d]", "abc", false),
            ("ab[^e-g]", "abc", true),
            ("a\\*b", "a*b", true),
            ("a\\*b", "ab", false),
            ("a?b", "a☺b", true),
            ("a[^a]b", "a☺b", true),
            ("a???b", "a☺b", false),
            ("[a-ζ]*", "α", true),
            ("*[a-ζ]", "A", false),
            ("a?b", "a/b", false),
            ("a*b", "a/b", false),
            ("[\\]a]", "]", true),
            ("[\\-]", "-", true),
            ("[x\\-]", "x", true),
            ("[x\\-]", "-", true),
            ("[x\\-]", "z", false),
            ("[\\-x]", "x", true),
            ("[]a]", "]", false),
            ("[-]", "-", false),
            ("[x-]", "x", false),
            ("[x-]", "-", false),
            ("[-x]", "x", false),
            ("\\", "a", false),
            ("[a-b-c]", "a", false),
            ("[", "a", false),
            ("[^", "a", false),
            ("[^bc", "a", false),
            ("a[", "a", false),
            ("a[", "ab", false),
            ("a[", "x", false),
            ("a/b[", "x", false),
            ("*x", "xxx", true),
            ("", "", true),
            ("", "a", false),
            ("*", "", true),
        ];
        for (pattern, name, want) in cases {
            assert_eq!(matches(pattern, name), want, "{pattern:?} vs {name:?}");
        }
    }

    #[test]
    fn many_stars_stay_fast() {
        let pattern = "*a".repeat(200);
        let name = "a".repeat(199);
        assert!(!matches(&pattern, &name));
    }
}
